// Build facts handed in by the build as C macros: SwiftPM has no way to pass a value into Swift
// code at build time, and -Xcc -D reaches C targets without changing any source file.
#include "vault_build_info.h"
#include <stddef.h>

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
