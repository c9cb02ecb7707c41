#!/usr/bin/env bash
# Installs what building and testing vault needs on a fresh Debian/Ubuntu machine:
# libsodium-dev (the vault's cryptography), libsqlite3-dev (its index), zlib1g-dev (the tests read
# compressed age test vectors), GNU time (peak-memory tests and bench)
# and tmux (the tests that render tables and the progress bar in a real terminal at 80 and 40 columns).
# As root it uses apt-get; otherwise it says what to install and fails.
set -euo pipefail

missing=()
lean=()
pkg-config --exists libsodium 2>/dev/null || missing+=(libsodium-dev)
pkg-config --exists sqlite3 2>/dev/null || missing+=(libsqlite3-dev)
pkg-config --exists zlib 2>/dev/null || missing+=(zlib1g-dev)
[ -x /usr/bin/time ] || missing+=(time)
command -v tmux >/dev/null 2>&1 || missing+=(tmux)
command -v python3 >/dev/null 2>&1 || missing+=(python3)
for extra in "$@"; do
    case "$extra" in
        age) command -v age >/dev/null 2>&1 || missing+=(age) ;;
        php) [ -x /usr/bin/php ] || missing+=(php-cli) ;;
        curl) command -v curl >/dev/null 2>&1 || missing+=(curl) ;;
        sqlite3) command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3) ;;
        # Without recommended packages: the headless browser needs none of them (12 s here).
        chromium) [ -x /usr/bin/chromium ] || lean+=(chromium) ;;
        chromium-driver) [ -x /usr/bin/chromedriver ] || lean+=(chromium-driver) ;;
    esac
done

[ ${#missing[@]} -eq 0 ] && [ ${#lean[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "vault: installing ${missing[*]} ${lean[*]} with apt-get" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    [ ${#missing[@]} -eq 0 ] || apt-get install -y -qq "${missing[@]}" >/dev/null
    [ ${#lean[@]} -eq 0 ] || apt-get install -y -qq --no-install-recommends "${lean[@]}" >/dev/null
else
    echo "vault: missing ${missing[*]} ${lean[*]}" >&2
    echo "vault: hint: install them with your package manager, e.g. sudo apt-get install ${missing[*]} ${lean[*]}" >&2
    exit 1
fi
