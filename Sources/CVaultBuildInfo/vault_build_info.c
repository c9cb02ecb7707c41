// Build facts written by scripts/static-build.sh into generated/build.h (git-ignored) for the
// length of the build: SwiftPM has no way to pass a value into Swift code at build time, and a
// header (unlike a -Xcc -D flag, which changes every target's flags and rebuilds them all) makes
// only this file recompile when the commit changes. Without it: "unknown" and a plain build.
#include "vault_build_info.h"
#include <stddef.h>

#if __has_include("generated/build.h")
#include "generated/build.h"
#endif

const char *vault_build_commit(void) {
#ifdef VAULT_COMMIT
    return VAULT_COMMIT;
#else
    return "unknown";
#endif
}

const char *vault_build_flavor(void) {
#ifdef VAULT_BUILD
    return VAULT_BUILD;
#else
    return NULL;
#endif
}
