#ifndef VAULT_BUILD_INFO_H
#define VAULT_BUILD_INFO_H

/// The source commit the binary was built from (VAULT_COMMIT in generated/build.h, which
/// scripts/static-build.sh writes), or "unknown".
const char *vault_build_commit(void);

/// How it was built (VAULT_BUILD: "release, static"), or NULL for a plain `swift build`.
const char *vault_build_flavor(void);

#endif
