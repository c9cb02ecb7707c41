#!/usr/bin/env bash
# Builds the release binary that `make install` and `make dist` ship: the Swift runtime and
# Foundation linked in statically (--static-swift-stdlib), and libsodium and SQLite statically
# too, from Debian's own libsodium-dev and libsqlite3-dev (their .a archives). What is left is
# dynamically linked system libraries only (libc, libstdc++, libm, zlib, and libxml2 with ICU,
# which Foundation's XML parser — used for S3 answers — needs).
#
# How libsodium and SQLite become static: SwiftPM asks pkg-config for their flags, and the
# linker takes a shared library over an archive in the same folder. So this build gets its own
# pkg-config files, whose -L names a folder holding only the archives: the linker finds
# libsodium.a there before it looks in /usr/lib. Nothing in Package.swift changes.
# Usage: scripts/static-build.sh BUILD_PATH
set -euo pipefail
build=${1:-.build-static}
mkdir -p "$build/pkgconfig" "$build/archives"
here=$(cd "$build" && pwd)
for lib in sodium sqlite3; do
    archive=$(pkg-config --variable=libdir "$( [ $lib = sodium ] && echo libsodium || echo sqlite3 )")/lib$lib.a
    [ -f "$archive" ] || { echo "vault: $archive is missing (install the -dev package)" >&2; exit 1; }
    ln -sf "$archive" "$here/archives/lib$lib.a"
done
cat > "$build/pkgconfig/libsodium.pc" <<PC
Name: libsodium
Description: libsodium, linked statically into vault
Version: $(pkg-config --modversion libsodium)
Libs: -L$here/archives -lsodium
Cflags: $(pkg-config --cflags libsodium)
PC
cat > "$build/pkgconfig/sqlite3.pc" <<PC
Name: SQLite
Description: SQLite, linked statically into vault
Version: $(pkg-config --modversion sqlite3)
Libs: -L$here/archives -lsqlite3 -lm
Cflags: $(pkg-config --cflags sqlite3)
PC
# zlib stays a shared system library, but its own pkg-config file would add -L/usr/lib/…, where
# the linker would then find libsodium.so and libsqlite3.so before the archives above: this
# build's zlib.pc names no folder.
cat > "$build/pkgconfig/zlib.pc" <<PC
Name: zlib
Description: zlib, linked dynamically (a system library)
Version: $(pkg-config --modversion zlib)
Libs: -lz
Cflags: $(pkg-config --cflags zlib)
PC
# The commit (and whether the tree had changes) goes into a header in this build's folder, named
# with -Xcc -I, that only the build-info C file reads ("unknown" outside git): only that file
# recompiles when the commit changes, and nothing is written into the source tree, so a debug
# build at the same time (CI runs both at once) and a plain `swift build` never claim these facts.
commit=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if [ "$commit" != unknown ] && ! git diff --quiet HEAD 2>/dev/null; then commit="$commit-modified"; fi
mkdir -p "$build/buildinfo"
facts=$(printf '#define VAULT_COMMIT "%s"\n#define VAULT_BUILD "release, static"\n' "$commit")
# Rewritten only when it changes, so an unchanged commit rebuilds nothing.
[ "$(cat "$build/buildinfo/vault_build_facts.h" 2>/dev/null)" = "$facts" ] || echo "$facts" > "$build/buildinfo/vault_build_facts.h"
# A lean binary (docs/PERFORMANCE.md, "start-up and size"): Swift code optimized for size
# (its hot loops are C and assembly: libsodium, BoringSSL's SHA-256, vault's base64); linked by
# lld with identical code folded, relative relocations packed (DT_RELR: glibc 2.36 or later) and
# no symbol exported (the Swift toolchain's static linking exports every symbol of every module
# for dlsym, which nothing in vault uses; unexported, the unused ones are also collected).
PKG_CONFIG_PATH="$here/pkgconfig" swift build -c release --static-swift-stdlib --build-path "$build" --product vault \
    -Xcc -I"$here/buildinfo" -Xswiftc -Osize -Xswiftc -use-ld=lld -Xlinker --no-export-dynamic \
    -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --icf=all
