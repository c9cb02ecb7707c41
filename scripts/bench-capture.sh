#!/usr/bin/env bash
# `make bench`, capture-only stations (issue 62): `vault add` on a capture-only station (each
# document sealed to the office's age recipient as it is read) beside `vault add` on an ordinary
# vault, in the same run: one 512 MiB document, and 2,000 files of 4 KiB in one `add -r`.
# Target: within 1.3x of the ordinary add. Method as bench.sh: median of RUNS runs (default 3),
# wall time and peak RSS from GNU time, after sync; inputs in the page cache; a fresh object
# folder for each run; both vaults on the same disk, --kdf interactive.
set -euo pipefail
vault="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
RUNS="${RUNS:-3}"
work="$(mktemp -d "${BENCH_DIR:-/var/tmp}/vault-bench-XXXXXX")"
trap 'rm -rf "$work"' EXIT
export VAULT_PASSWORD="bench password"

median_of() {
    local results=()
    for _ in $(seq "$RUNS"); do
        sync
        /usr/bin/time -q -o "$work/time" -f '%e %M' "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }
        results+=("$(tail -1 "$work/time")")
        rm -rf "$work"/plain/objects/* "$work"/plain/index.db "$work"/capture/objects/* "$work"/capture/index.db
    done
    printf '%s\n' "${results[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p"
}

"$vault" keygen --out "$work/office.key" > "$work/office.recipients" 2>/dev/null
"$vault" init --vault "$work/plain" --kdf interactive 2>/dev/null
"$vault" init --vault "$work/capture" --kdf interactive --capture-for "$work/office.recipients" 2>/dev/null

head -c $((512 << 20)) /dev/urandom > "$work/half.bin"
small="$work/small"; mkdir -p "$small"
for i in $(seq 2000); do head -c 4096 /dev/urandom > "$small/f$i.bin"; done
cat "$work/half.bin" "$small"/* > /dev/null

echo
echo "capture-only station: add beside an ordinary vault's (same run; target: within 1.3x)"
printf '%-44s %10s %10s %12s\n' "" "ordinary" "capture" "ratio"
compare() { # name args...
    local name=$1; shift
    local p c
    p=$(median_of "$vault" add --vault "$work/plain" --allow-duplicate "$@")
    c=$(median_of "$vault" add --vault "$work/capture" "$@")
    awk -v n="$name" -v p="${p% *}" -v c="${c% *}" -v pk="${p#* }" -v ck="${c#* }" 'BEGIN {
        printf "%-44s %8.2f s %8.2f s %11.2fx   (peak RSS %.0f / %.0f MiB)\n", n, p, c, c / p, pk / 1024, ck / 1024 }'
}
compare "add, one document of 512 MiB" "$work/half.bin"
compare "add -r, 2,000 files of 4 KiB" -r "$small"
