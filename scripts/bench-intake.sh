#!/usr/bin/env bash
# Part of `make bench` (also runs alone: scripts/bench-intake.sh .build/release/vault): the intake
# of one `vault receive` against PHP's built-in server (`php -S`, 4 workers) moving `$_FILES` to
# disk (scripts/intake-peer.php), with the same batches in the same run.
# Load: STATIONS (20) stations at once, each a curl process sending BATCHES (5) batches one after
# the other, each a form (curl -F) of 20 documents of DOC_KIB (256) KiB; every answer must be 200.
# vault receive checks each document's size and SHA-256, encrypts it, and commits each batch
# durably (fsync) with a signed receipt; the PHP peer only moves the files (no digest, no fsync).
# Method: median of RUNS (3) runs of the whole load, alternating; wall time of the load; payload
# GB/s = 10^9 bytes of form body per second, and batches per second. Peers on 127.0.0.1 share the
# two cores with curl.
set -euo pipefail
vault="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
root="$(cd "$(dirname "$0")/.." && pwd)"
RUNS="${RUNS:-3}" STATIONS="${STATIONS:-20}" BATCHES="${BATCHES:-5}" DOC_KIB="${DOC_KIB:-256}"
work="$(mktemp -d "${BENCH_DIR:-/var/tmp}/vault-bench-intake-XXXXXX")"
pids=()
stop_peers() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do
        for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap stop_peers EXIT
if ! command -v php >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1; then
    echo "(php or curl is missing: no intake figures; 'make peers')"
    exit 0
fi
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 200); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null && return; sleep 0.05; done; echo "peer on port $1 did not start" >&2; exit 1; }

# The documents of a batch (the same 20 files in every batch: each is stored again each time).
mkdir -p "$work/docs"
form=()
for i in $(seq -w 1 20); do
    head -c $((DOC_KIB << 10)) /dev/urandom > "$work/docs/scan-$i.bin"
    form+=(-F "files[]=@$work/docs/scan-$i.bin;type=application/octet-stream")
done

# The load: every station at once; each sends its batches in turn. Fails unless every answer is 200.
load() {  # load URL TOKENS: TOKENS "stations" (each its own, vault's) or one token for all
    local url=$1 tokens=$2 dir="$work/load"
    rm -rf "$dir"; mkdir -p "$dir"
    local senders=()
    for s in $(seq 1 "$STATIONS"); do
        (
            if [ "$tokens" = stations ]; then token=$(cat "$work/token-$s"); else token=$tokens; fi
            for b in $(seq 1 "$BATCHES"); do
                curl -sS -o "$dir/answer-$s-$b" -w '%{http_code}\n' -H "Authorization: Bearer $token" \
                    -H "Idempotency-Key: run-$RUN-station-$s-batch-$b" "${form[@]}" "$url" >> "$dir/$s"
            done
        ) &
        senders+=($!)
    done
    wait "${senders[@]}"
    local ok
    ok=$(cat "$dir"/[0-9]* 2>/dev/null | grep -c '^200$' || true)
    if [ "$ok" -ne $((STATIONS * BATCHES)) ]; then
        echo "intake: $ok of $((STATIONS * BATCHES)) answers were 200; one of the others:" \
            "$(grep -L -e stored -e receipt "$dir"/answer-* 2>/dev/null | head -1 | xargs -r cat)" >&2
        return 1
    fi
}
cpu_of() { awk '{ print ($14 + $15) / 100 }' "/proc/$1/stat" 2>/dev/null || echo 0; }  # CPU s (user + sys)
timed() {  # timed FILE URL TOKENS PID: one load; appends its wall time and the CPU s of PID (the server)
    local start end c0 c1
    c0=$(cpu_of "$4"); start=$(date +%s.%N); load "$2" "$3"; end=$(date +%s.%N); c1=$(cpu_of "$4")
    echo "$(echo "$end - $start" | bc -l) $(echo "$c1 - $c0" | bc -l)" >> "$1"
}

# vault receive, 20 stations.
export VAULT_DIR="$work/office" VAULT_PASSWORD="bench password"
"$vault" init --kdf interactive 2>/dev/null
for s in $(seq 1 "$STATIONS"); do "$vault" receive station add "station-$s" > "$work/token-$s" 2>/dev/null; done
"$vault" receive --listen 127.0.0.1:0 --max-documents 20 > "$work/receive.out" 2> "$work/receive.log" &
pids+=($!); receiver=$!
for _ in $(seq 200); do grep -q '^listening on ' "$work/receive.out" 2>/dev/null && break; sleep 0.05; done
vault_url="$(sed -n 's/^listening on //p' "$work/receive.out" | head -1)/batches"
# PHP's built-in server with 4 workers.
php_port=$(free_port); mkdir -p "$work/php/store" "$work/php/tmp"
PHP_CLI_SERVER_WORKERS=4 INTAKE_STORE="$work/php/store" INTAKE_TOKEN=bench-token php -n -d max_file_uploads=20 \
    -d post_max_size=1G -d upload_max_filesize=1G -d display_errors=0 -d upload_tmp_dir="$work/php/tmp" \
    -S "127.0.0.1:$php_port" "$root/scripts/intake-peer.php" >/dev/null 2>&1 &
pids+=($!); wait_port "$php_port"; php=$!
php_url="http://127.0.0.1:$php_port/"
# The size of one batch's body, as curl sends it.
body=$(curl -sS -o /dev/null -w '%{size_upload}' -H "Authorization: Bearer bench-token" "${form[@]}" "$php_url")
total_bytes=$((STATIONS * BATCHES * ${body%.*}))
batches=$((STATIONS * BATCHES))
rm -rf "$work/php/store"/*

: > "$work/v"; : > "$work/p"
for RUN in $(seq "$RUNS"); do
    timed "$work/v" "$vault_url" stations "$receiver"
    timed "$work/p" "$php_url" bench-token "$php"
    rm -rf "$work/php/store"/*
done
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
v=$(awk '{ print $1 }' "$work/v" | median); p=$(awk '{ print $1 }' "$work/p" | median)
vc=$(awk '{ print $2 }' "$work/v" | median)
stored=$("$vault" list --json 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
echo
echo "intake: $STATIONS stations at once, $BATCHES batches each of 20 x $DOC_KIB KiB (curl -F forms), median of $RUNS"
awk -v n="vault receive (digests, encrypted, fsynced, signed)" -v t="$v" -v b="$total_bytes" -v k="$batches" \
    'BEGIN { printf "  %-52s %6.2f s %6.3f GB/s %7.1f batches/s\n", n, t, b / t / 1e9, k / t }'
awk -v n="php -S, 4 workers, \$_FILES moved to disk" -v t="$p" -v b="$total_bytes" -v k="$batches" \
    'BEGIN { printf "  %-52s %6.2f s %6.3f GB/s %7.1f batches/s\n", n, t, b / t / 1e9, k / t }'
awk -v v="$v" -v p="$p" 'BEGIN { printf "  -> vault receive takes batches at %.2fx the rate of PHP'"'"'s server in this run\n", p / v }'
awk -v c="$vc" -v b="$total_bytes" -v t="$v" 'BEGIN { printf "  (vault receive itself: %.2f CPU s per GB of payload, %.2f of the two cores; the rest is curl and the kernel)\n", c / (b / 1e9), c / t / 2 }'
echo "  (the receiver's vault holds $stored documents after $RUNS runs: every batch stored, none twice)"

# The same load on a SeaweedFS cluster of its own processes (scripts/cluster_test.py: a master,
# three volume servers, a filer, the S3 gateway): one receiver, then two sharing one vault there.
stop_peers; pids=(); trap - EXIT
if [ -x "$root/.build-peers/venv/bin/weed" ]; then
    echo
    RUNS="$RUNS" STATIONS="$STATIONS" BATCHES="$BATCHES" DOC_KIB="$DOC_KIB" \
        python3 "$root/scripts/cluster_test.py" --vault-bin "$vault" --bench-intake
else
    echo "(SeaweedFS is missing: no cluster intake figures; 'make peers')"
fi
