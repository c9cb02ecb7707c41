#!/usr/bin/env bash
# Runs the binary `make install` ships on this machine with the Swift toolchain out of reach: in
# a fresh mount namespace (needs root: unshare -m) an empty tmpfs is mounted over the toolchain's
# library folder, so nothing from it can be loaded. There it does init, add, list, get and export.
# Also prints what ldd lists (system libraries only) and the binary's size.
# Usage: scripts/install-check.sh BINARY
set -euo pipefail
bin=$(readlink -f "$1")
toolchain_lib=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")/lib/swift
echo "binary: $bin ($(du -h "$bin" | cut -f1), $(stat -c %s "$bin") bytes)"
echo "ldd:"; ldd "$bin" | sed 's/^/  /'
if ldd "$bin" | grep -q "$toolchain_lib"; then echo "vault: the binary loads libraries from the toolchain ($toolchain_lib)" >&2; exit 1; fi
if ldd "$bin" | grep -q "libsodium\|libsqlite"; then echo "vault: libsodium or SQLite is linked dynamically" >&2; exit 1; fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf 'a scanned page\n' > "$work/page.txt"
head -c 300000 /dev/urandom > "$work/photo.bin"
cat > "$work/run.sh" <<SH
set -eu
mount -t tmpfs tmpfs "$toolchain_lib"
[ -z "\$(ls "$toolchain_lib")" ] || { echo "the toolchain is still visible" >&2; exit 1; }
export VAULT_DIR="$work/vault" VAULT_PASSWORD="install check"
cd "$work"
"$bin" --version
"$bin" init --kdf interactive -q
"$bin" add page.txt photo.bin -q
"$bin" list
"$bin" get page.txt -o page.out && cmp page.txt page.out
"$bin" get photo.bin -o photo.out && cmp photo.bin photo.out
"$bin" export --out outbox -q
ls outbox
echo "ok: init, add, list, get and export ran with $toolchain_lib hidden"
SH
unshare -m sh "$work/run.sh"
