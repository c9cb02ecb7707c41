#!/usr/bin/env bash
# `make bench`, the installed binary: size and start-up time of the static build (what `make
# install` ships) beside the dynamically linked release build and age. Method: each command run
# 20 times in a row, wall time per run from the total (`date +%s%N`), after one warm-up run;
# sizes as stored (the static binary is also shown stripped, as `install -s` installs it). Then
# `--version` of the stripped static binary against `age --version`: 15 rounds of 20 runs each,
# alternating, the ratio of the medians (goal: at most 2), and the size goal (25 MB stripped).
# Usage: scripts/bench-install.sh DYNAMIC_BINARY STATIC_BINARY
set -euo pipefail
dynamic=$1 static=$2
work=$(mktemp -d "${BENCH_DIR:-/var/tmp}/vault-bench-install-XXXXXX")
trap 'rm -rf "$work"' EXIT
strip -o "$work/vault-stripped" "$static"
per_run() { # CMD...: milliseconds per run, mean of 20 after a warm-up
    "$@" >/dev/null 2>&1 || true
    local start end
    start=$(date +%s%N)
    for _ in $(seq 20); do "$@" >/dev/null 2>&1 || true; done
    end=$(date +%s%N)
    awk -v ns=$((end - start)) 'BEGIN { printf "%.1f ms", ns / 20 / 1e6 }'
}
export VAULT_DIR="$work/vault" VAULT_PASSWORD="bench password"
"$static" init --kdf interactive -q 2>/dev/null
for i in $(seq 10); do head -c 20000 /dev/urandom > "$work/doc$i.bin"; done
"$static" add -q "$work"/doc*.bin
echo
echo "installed binary — method: wall time per run, mean of 20 after a warm-up; list opens a 10-document vault (Argon2id interactive)"
printf '%-42s %8s %12s %16s\n' "binary" "size" "--version" "list (10 docs)"
printf '%-42s %8s %12s %16s\n' "vault, dynamic (swift build -c release)" "$(du -h "$dynamic" | cut -f1)" "$(per_run "$dynamic" --version)" "$(per_run "$dynamic" list)"
printf '%-42s %8s %12s %16s\n' "vault, static (make install)" "$(du -h "$work/vault-stripped" | cut -f1)" "$(per_run "$work/vault-stripped" --version)" "$(per_run "$work/vault-stripped" list)"
size=$(stat -c %s "$work/vault-stripped")
awk -v b="$size" 'BEGIN { printf "static, stripped: %d bytes = %.1f MB (goal: at most 25 MB)\n", b, b / 1e6 }'
if command -v age >/dev/null; then
    printf '%-42s %8s %12s %16s\n' "age $(age --version)" "$(du -h "$(command -v age)" | cut -f1)" "$(per_run age --version)" "-"
fi
if command -v age >/dev/null; then
    : > "$work/v"; : > "$work/a"
    for _ in $(seq 15); do
        per_run "$work/vault-stripped" --version | cut -d' ' -f1 >> "$work/v"
        per_run age --version | cut -d' ' -f1 >> "$work/a"
    done
    median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
    awk -v v="$(median "$work/v")" -v a="$(median "$work/a")" 'BEGIN {
        printf "--version, 15 alternating rounds of 20: vault %.2f ms, age %.2f ms: vault takes %.2fx age'"'"'s time (goal: at most 2)\n", v, a, v / a }'
fi
echo "(the dynamic build also needs the Swift toolchain's libraries, about $(du -sh "$(dirname "$(dirname "$(readlink -f "$(command -v swiftc)")")")/lib/swift/linux" | cut -f1), at run time)"
