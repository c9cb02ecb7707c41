#!/usr/bin/env bash
# Part of `make bench` (also runs alone: scripts/bench-scale.sh .build/release/vault): each
# command's cost by vault size (docs/PERFORMANCE.md, "scale").
# Method: vaults made by vault-fixture (4 KiB documents, one history record per document, so a
# vault of N documents has a history of N records), on disk, in the page cache. For each size:
# RUNS rounds (default 5) of add one 4 KiB file / get it by name / get it by id prefix / export it
# / upload it (to the local sink receiver) / remove it, each timed alone; the whole-vault
# commands once. Times are medians of wall time (GNU time), with peak RSS; "I/O" is the bytes the
# process read and wrote (rchar + wchar from /proc/self/io, through VAULT_IO_REPORT). Every command
# unlocks the vault (Argon2id interactive, about 70 ms of each row). Sizes: 1,000 and 10,000;
# BENCH_SCALE=1 adds 100,000 (making it takes about 10 minutes). BENCH_VAULTS=DIR keeps the vaults
# in DIR (as v1000, v10000, …) and uses those already there, so a second run does not make them again.
set -euo pipefail
vault="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
fixture="$(dirname "$vault")/vault-fixture"
root="$(cd "$(dirname "$0")/.." && pwd)"
RUNS="${RUNS:-5}"
SIZES="${SIZES:-1000 10000}"
[ "${BENCH_SCALE:-0}" = 1 ] && SIZES="$SIZES 100000"
work="$(mktemp -d "${BENCH_DIR:-/var/tmp}/vault-bench-scale-XXXXXX")"
receiver_pid=
trap '[ -n "$receiver_pid" ] && kill "$receiver_pid" 2>/dev/null; rm -rf "$work"' EXIT
export VAULT_PASSWORD="bench password" VAULT_IO_REPORT="$work/io"
[ -x "$fixture" ] || (cd "$root" && swift build -c release --product vault-fixture >/dev/null)

python3 "$root/scripts/receiver.py" --port-file "$work/port" --mode sink --quiet 2>/dev/null &
receiver_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
url="http://127.0.0.1:$(cat "$work/port")/batches"

# timed NAME CMD...: runs CMD once; appends "seconds kib iobytes" to $work/NAME.
timed() {
    local name=$1; shift
    sync
    /usr/bin/time -q -o "$work/time" -f '%e %M' "$@" >"$work/stdout" 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }
    local io; io=$(awk '/^rchar|^wchar/ { s += $2 } END { print s }' "$work/io")
    echo "$(tail -1 "$work/time") $io" >> "$work/$name"
}
# median NAME: "seconds kib io" of the median run (by time).
median() { sort -n "$work/$1" | sed -n "$(( ($(wc -l < "$work/$1") + 1) / 2 ))p"; }
row() { # size name "s kib io" [docs]
    awk -v n="$1" -v c="$2" -v s="${3%% *}" -v r="$3" -v d="${4:-}" 'BEGIN {
        split(r, f, " "); rate = d == "" ? "" : sprintf("%9.0f docs/s", d / s)
        printf "%9s  %-34s %8.0f ms %9.1f MiB %10.1f KiB %s\n", n, c, s * 1000, f[2] / 1024, f[3] / 1024, rate }'
}

echo
echo "scale — $(nproc) cores; method: vault-fixture vaults (4 KiB documents, 1 record each); medians of $RUNS runs; wall time and peak RSS"
echo "from GNU time; I/O = bytes read + written (/proc/self/io); each command includes one Argon2id interactive unlock"
printf '%9s  %-34s %11s %13s %14s\n' "documents" "command" "time" "peak RSS" "I/O"
head -c 4096 /dev/urandom > "$work/seed"
for n in $SIZES; do
    v="${BENCH_VAULTS:-$work}/v$n"
    [ -d "$v" ] || "$fixture" "$v" "$n"
    rm -f "$work"/r-*
    for i in $(seq "$RUNS"); do
        head -c 4092 /dev/urandom > "$work/new-$i.bin"; printf '%04d' "$i" >> "$work/new-$i.bin"
        timed r-add "$vault" --vault "$v" add "$work/new-$i.bin"
        id=$(tr -d '\n' < "$work/stdout")
        timed r-get-name "$vault" --vault "$v" get "new-$i.bin"
        timed r-get-id "$vault" --vault "$v" get "${id:0:8}"
        rm -rf "$work/out1"
        timed r-export-one "$vault" --vault "$v" export --out "$work/out1" --progress none "${id:0:8}"
        timed r-upload-one "$vault" --vault "$v" upload --url "$url" --progress none --new-run --no-credentials "${id:0:8}"
        timed r-remove "$vault" --vault "$v" remove "${id:0:8}"
    done
    row "$n" "add one 4 KiB file" "$(median r-add)"
    row "$n" "get by name" "$(median r-get-name)"
    row "$n" "get by id prefix" "$(median r-get-id)"
    row "$n" "export --out DIR of one document" "$(median r-export-one)"
    row "$n" "upload of one document" "$(median r-upload-one)"
    row "$n" "remove one document" "$(median r-remove)"
    timed r-list "$vault" --vault "$v" list; row "$n" "list" "$(median r-list)" "$n"
    timed r-json "$vault" --vault "$v" list --json; row "$n" "list --json" "$(median r-json)" "$n"
    rm -rf "$work/out"
    timed r-export "$vault" --vault "$v" export --out "$work/out" --progress none; row "$n" "export --out DIR of everything" "$(median r-export)" "$n"
    rm -rf "$work/out"
    timed r-upload "$vault" --vault "$v" upload --url "$url" --progress none --new-run --no-credentials; row "$n" "upload of everything" "$(median r-upload)" "$n"
    timed r-audit "$vault" --vault "$v" audit; row "$n" "audit (headers)" "$(median r-audit)" "$n"
    timed r-verify "$vault" --vault "$v" verify; row "$n" "verify" "$(median r-verify)" "$n"
    # The first row of list --json, from start to the first bytes on the pipe.
    start=$(date +%s%N)
    "$vault" --vault "$v" list --json | { head -c 1 >/dev/null; date +%s%N > "$work/first"; cat >/dev/null; }
    awk -v n="$n" -v s="$start" -v e="$(cat "$work/first")" 'BEGIN { printf "%9s  %-34s %8.0f ms\n", n, "list --json: first byte", (e - s) / 1e6 }'
    [ -n "${BENCH_VAULTS:-}" ] || rm -rf "$v"
done
