#!/usr/bin/env bash
# Where vault's CPU time goes, by stage: `scripts/profile.sh .build/release/vault` (needs perf).
# Runs `add` of a 512 MiB file and `export` of 20 x 50 MiB under `perf record` (all threads,
# 2 kHz), and splits the samples by what they were doing: SHA-256 (swift-crypto/BoringSSL),
# libsodium (XChaCha20-Poly1305 chunks; Argon2id, about 0.06 s of it, at the interactive
# level), base64 (vault's AVX2 encoder), the kernel (read and write copies, page cache, fsync),
# and the rest. Each stage is printed as CPU seconds per GB of plaintext (10^9 bytes), from its
# share of the samples times the run's user + sys time. Page cache warm; see docs/PERFORMANCE.md.
set -euo pipefail
vault="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
command -v perf >/dev/null || { echo "perf is not installed (apt-get install linux-perf)"; exit 1; }
work="$(mktemp -d "${BENCH_DIR:-/var/tmp}/vault-profile-XXXXXX")"
trap 'rm -rf "$work"' EXIT
export VAULT_PASSWORD="profile password"

# profile NAME BYTES CMD...: one run under perf; prints the stage table.
profile() {
    local name=$1 bytes=$2; shift 2
    sync
    /usr/bin/time -q -o "$work/time" -f '%e %U %S' perf record -q -o "$work/perf.data" -F 2000 -- "$@" >/dev/null 2>"$work/stderr" \
        || { cat "$work/stderr" >&2; return 1; }
    perf report -i "$work/perf.data" --no-children --sort dso,sym --stdio 2>/dev/null | grep -E '^ +[0-9.]+%' > "$work/report"
    read -r wall user sys < <(tail -1 "$work/time")
    awk -v name="$name" -v b="$bytes" -v wall="$wall" -v cpu="$(echo "$user + $sys" | bc)" '
        { p = $1 + 0; line = $0
          if (line ~ /sha256/) s["SHA-256"] += p
          else if (line ~ /libsodium/) s["libsodium (XChaCha20-Poly1305, Argon2id)"] += p
          else if (line ~ /base64/) s["base64"] += p
          else if (line ~ /kernel/) s["kernel (copies, page cache, fsync)"] += p
          else s["other (Swift, malloc, dispatch, libc)"] += p }
        END {
          gb = b / 1e9
          printf "%s: %.2f s wall, %.2f CPU s/GB\n", name, wall, cpu / gb
          n = split("SHA-256|libsodium (XChaCha20-Poly1305, Argon2id)|base64|kernel (copies, page cache, fsync)|other (Swift, malloc, dispatch, libc)", k, "|")
          for (i = 1; i <= n; i++) printf "  %-44s %5.1f%%  %5.2f CPU s/GB\n", k[i], s[k[i]], s[k[i]] / 100 * cpu / gb }' "$work/report"
}

export VAULT_DIR="$work/vault"
"$vault" init --kdf interactive 2>/dev/null
head -c $((512 << 20)) /dev/urandom > "$work/big.bin"
cat "$work/big.bin" > /dev/null
profile "add 512 MiB" $((512 << 20)) "$vault" add --allow-duplicate "$work/big.bin"
rm -f "$work/big.bin"
export VAULT_DIR="$work/vault20"
"$vault" init --kdf interactive 2>/dev/null
mkdir -p "$work/docs"
for i in $(seq -w 1 20); do head -c $((50 << 20)) /dev/urandom > "$work/docs/doc$i.bin"; done
"$vault" add "$work/docs"/*.bin >/dev/null
rm -rf "$work/docs"
cat "$VAULT_DIR"/objects/*.vlt > /dev/null
profile "export 20 x 50 MiB to a folder" $((20 * (50 << 20))) "$vault" export --out "$work/out" --progress none -q
rm -rf "$work/out"
profile "export 20 x 50 MiB to a pipe" $((20 * (50 << 20))) bash -c "set -o pipefail; '$vault' export --out - --progress none -q | cat > /dev/null"
