#!/usr/bin/env bash
# `make bench`, capture-only stations (issue 62): `vault add` on a capture-only station (each
# document sealed to the office's age recipient as it is read) beside `vault add` on an ordinary
# vault, in the same run: one 512 MiB document, and 2,000 files of 4 KiB in one `add -r`.
# Target: within 1.3x of the ordinary add. Method as bench.sh: RUNS runs of each (default 3),
# wall time and peak RSS from GNU time, after sync; inputs in the page cache; medians shown. Runs
# of the two alternate, and the ratio is the median of each pair's ratio: a shared virtual disk's
# speed drifts by 2x within a minute, and the two runs of a pair see the same disk. Each run adds
# into a fresh copy of its vault and nothing is deleted until the end (ext4 passes over the inodes
# of files deleted in the last 30 s when it makes new ones: `rm` of the last run's 4,000 files
# made the next 4,000 creates 2x slower). Both vaults on the same disk, --kdf interactive.
set -euo pipefail
vault="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
RUNS="${RUNS:-3}"
work="$(mktemp -d "${BENCH_DIR:-/var/tmp}/vault-bench-XXXXXX")"
trap 'rm -rf "$work"' EXIT
export VAULT_PASSWORD="bench password"

timed() { # vault-template args... -> "seconds peak-KiB" of one add into a fresh copy of the template
    local template=$1 copy; shift
    copy=$(mktemp -d "$work/run-XXXXXX")
    cp -a "$template/." "$copy"
    sync
    /usr/bin/time -q -o "$work/time" -f '%e %M' "$vault" add --vault "$copy" "$@" \
        >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }
    tail -1 "$work/time"
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
printf '%-44s %10s %10s %12s\n' "" "ordinary" "capture" "ratio (median of pairs)"
compare() { # name args...: medians of each, and the median of the ratios of runs made one after the other
    local name=$1; shift
    local pairs=()
    for _ in $(seq "$RUNS"); do
        pairs+=("$(timed "$work/plain" --allow-duplicate "$@") $(timed "$work/capture" "$@")")
    done
    printf '%s\n' "${pairs[@]}" | awk -v n="$name" '
        { p[NR] = $1; pk[NR] = $2; c[NR] = $3; ck[NR] = $4; r[NR] = $3 / $1 }
        function median(a, k, i, j, t) {
            for (i = 1; i <= NR; i++) k[i] = a[i]
            for (i = 2; i <= NR; i++) for (j = i; j > 1 && k[j - 1] > k[j]; j--) { t = k[j]; k[j] = k[j - 1]; k[j - 1] = t }
            return k[int((NR + 1) / 2)]
        }
        END {
            printf "%-44s %8.2f s %8.2f s %11.2fx   (peak RSS %.0f / %.0f MiB)\n",
                n, median(p), median(c), median(r), median(pk) / 1024, median(ck) / 1024 }'
}
compare "add, one document of 512 MiB" "$work/half.bin"
compare "add -r, 2,000 files of 4 KiB" -r "$small"
