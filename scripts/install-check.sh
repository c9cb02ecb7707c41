#!/usr/bin/env bash
# Checks what `make install` put under a prefix, on this machine with the Swift toolchain out of
# reach: in a fresh mount namespace (needs root: unshare -m) an empty tmpfs is mounted over the
# toolchain's library folder, so nothing from it can be loaded, and the installed binary does
# init, add, list, get and export there. Also checks that ldd lists system libraries only, that
# neither libxml2 nor ICU is in the binary (loaded, or linked in: ICU's data, Foundation's
# internationalization), that the manual renders without warnings, and that the bash completion
# loads.
# Usage: scripts/install-check.sh PREFIX-TREE   (e.g. a DESTDIR plus /usr/local)
set -euo pipefail
tree=$(readlink -f "$1")
bin=$tree/bin/vault
toolchain_lib=$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")/lib/swift
echo "binary: $bin ($(du -h "$bin" | cut -f1), $(stat -c %s "$bin") bytes)"
echo "ldd:"; ldd "$bin" | sed 's/^/  /'
if ldd "$bin" | grep -q "$toolchain_lib"; then echo "vault: the binary loads libraries from the toolchain ($toolchain_lib)" >&2; exit 1; fi
if ldd "$bin" | grep -q "libsodium\|libsqlite"; then echo "vault: libsodium or SQLite is linked dynamically" >&2; exit 1; fi
# The lean binary (docs/PERFORMANCE.md): no libxml2, no ICU, dynamically or statically.
if ldd "$bin" | grep -q "libxml2\|libicu"; then echo "vault: the binary loads libxml2 or ICU" >&2; exit 1; fi
if grep -qa "icudt[0-9]" "$bin" || grep -qa "FoundationInternationalization" "$bin"; then
    echo "vault: the binary holds ICU's data or Foundation's internationalization" >&2; exit 1
fi
warnings=$(MANWIDTH=80 man --warnings -l "$tree/share/man/man1/vault.1" 2>&1 >/dev/null)
[ -z "$warnings" ] || { echo "vault: the installed manual has warnings:"; echo "$warnings"; exit 1; } >&2
MANWIDTH=80 man -l "$tree/share/man/man1/vault.1" 2>/dev/null | grep -q "EXIT STATUS" || { echo "vault: the installed manual has no EXIT STATUS" >&2; exit 1; }
bash -c "source '$tree/share/bash-completion/completions/vault' && complete -p vault" >/dev/null || { echo "vault: the bash completion does not load" >&2; exit 1; }
for f in share/zsh/site-functions/_vault share/fish/vendor_completions.d/vault.fish share/doc/vault/README.md share/doc/vault/CLI.md; do
  [ -s "$tree/$f" ] || { echo "vault: $f is missing or empty" >&2; exit 1; }
done
echo "ok: manual (no warnings), completions and docs installed"
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
# The debug builds' test level (Argon2id's minimum) is not a word the installed binary knows.
rc=0; "$bin" --vault "$work/weak" init --kdf insecure-test -q 2>/dev/null || rc=\$?
[ "\$rc" = 64 ] && [ ! -e "$work/weak" ] || { echo "the installed binary accepts --kdf insecure-test (exit \$rc)" >&2; exit 1; }
"$bin" add page.txt photo.bin -q
"$bin" list
"$bin" get page.txt -o page.out && cmp page.txt page.out
"$bin" get photo.bin -o photo.out && cmp photo.bin photo.out
"$bin" export --out outbox -q
ls outbox
echo "ok: init, add, list, get and export ran with $toolchain_lib hidden; --kdf insecure-test is refused"
SH
unshare -m sh "$work/run.sh"
