// Build facts written by scripts/static-build.sh into vault_build_facts.h in its own build folder,
// which it names with -Xcc -I: SwiftPM has no way to pass a value into Swift code at build time,
// and a header (unlike a -Xcc -D flag, whose value would change every target's flags and rebuild
// them all) makes only this file recompile when the commit changes. Nothing is written into the
// source tree, so a debug build running at the same time (CI builds both at once) never sees the
// release build's facts. Without it: "unknown" and a plain build.
#include "vault_build_info.h"
#include <stddef.h>

#if __has_include("vault_build_facts.h")
#include "vault_build_facts.h"
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
