#!/usr/bin/env bash
# Part of `make bench` (also runs alone: scripts/bench-intake.sh .build/release/vault): the intake
# of one `vault receive` against PHP's built-in server (`php -S`, 4 workers) moving `$_FILES` to
# disk (scripts/intake-peer.php), with the same batches in the same run, in three shapes:
#   256k  STATIONS (20) stations at once, each sending BATCHES (5) batches in turn, each a form of
#         20 documents of 256 KiB;
#   4k    the same with documents of 4 KiB (2,000 documents);
#   1g    one station sending one batch of one document of 1 GiB.
# The load comes from one process (scripts/intake-load.py: an event loop, bodies built once and
# sent from memory, the 1 GiB document with sendfile), so that what is measured is the server's
# share of the two cores; every answer must be 200. vault receive checks each document's size
# and SHA-256, encrypts it, and commits each batch durably (fsync) with a signed receipt; the
# PHP peer only moves the files (no digest, no fsync). Nothing is deleted until the end: on this
# machine's ext4 (no journal), a file created within minutes of many deletions in its block
# group costs 0.7 ms instead of 0.04 (the allocator skips recently deleted inodes), which made
# whichever server ran after a cleanup slower.
# Method: median of RUNS (3) runs of each shape, alternating servers; wall time of the load;
# payload GB/s = 10^9 bytes of form body per second; batches per second; the server's CPU
# seconds (user + system, /proc/PID/stat, PHP's with its workers) per GB of payload. The floor
# (1g): `vault-fixture --floor`, which only finds the document in the same body, hashes the
# body and the document, encrypts it in 64 KiB chunks and writes and fsyncs it.
set -euo pipefail
vault="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
fixture="$(dirname "$vault")/vault-fixture"
root="$(cd "$(dirname "$0")/.." && pwd)"
RUNS="${RUNS:-3}" STATIONS="${STATIONS:-20}" BATCHES="${BATCHES:-5}" DOC_KIB="${DOC_KIB:-256}"
SHAPES="${SHAPES:-256k 4k 1g}"
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
if ! command -v php >/dev/null 2>&1; then
    echo "(php is missing: no intake figures; 'make peers')"
    exit 0
fi
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 200); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null && return; sleep 0.05; done; echo "peer on port $1 did not start" >&2; exit 1; }

# The documents (the same in every batch: each is stored again each time).
mkdir -p "$work/docs"
for i in $(seq -w 1 20); do
    head -c $((DOC_KIB << 10)) /dev/urandom > "$work/docs/scan-$i.bin"
    head -c 4096 /dev/urandom > "$work/docs/small-$i.bin"
done
case " $SHAPES " in *" 1g "*) head -c $((1 << 30)) /dev/urandom > "$work/docs/big.bin" ;; esac

# vault receive, STATIONS stations.
export VAULT_DIR="$work/office" VAULT_PASSWORD="bench password"
"$vault" init --kdf interactive 2>/dev/null
for s in $(seq 1 "$STATIONS"); do "$vault" receive station add "station-$s" >> "$work/vault-tokens" 2>/dev/null; done
"$vault" receive --listen 127.0.0.1:0 > "$work/receive.out" 2> "$work/receive.log" &
pids+=($!); receiver=$!
for _ in $(seq 200); do grep -q '^listening on ' "$work/receive.out" 2>/dev/null && break; sleep 0.05; done
vault_url="$(sed -n 's/^listening on //p' "$work/receive.out" | head -1)/batches"
# PHP's built-in server with 4 workers.
php_port=$(free_port); mkdir -p "$work/php/store" "$work/php/tmp"
echo bench-token > "$work/php-tokens"
PHP_CLI_SERVER_WORKERS=4 INTAKE_STORE="$work/php/store" INTAKE_TOKEN=bench-token php -n -d max_file_uploads=20 \
    -d post_max_size=2G -d upload_max_filesize=2G -d display_errors=0 -d upload_tmp_dir="$work/php/tmp" \
    -d memory_limit=256M -S "127.0.0.1:$php_port" "$root/scripts/intake-peer.php" >/dev/null 2>&1 &
pids+=($!); wait_port "$php_port"; php=$!
php_url="http://127.0.0.1:$php_port/"

# run SERVER SHAPE RUN: one load; appends its JSON line to $work/SERVER-SHAPE.
run() {
    local url pid tokens args=()
    if [ "$1" = vault ]; then url=$vault_url pid=$receiver tokens="$work/vault-tokens"; else
        url=$php_url pid=$php tokens="$work/php-tokens"; fi
    case $2 in
        256k) args=(--stations "$STATIONS" --batches "$BATCHES" --files "$work"/docs/scan-*.bin) ;;
        4k) args=(--stations "$STATIONS" --batches "$BATCHES" --files "$work"/docs/small-*.bin) ;;
        1g) args=(--stations 1 --batches 1 --big "$work/docs/big.bin") ;;
    esac
    python3 "$root/scripts/intake-load.py" --url "$url" --tokens "$tokens" --server-pid "$pid" \
        --run "$2-run-$3" "${args[@]}" >> "$work/$1-$2"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
field() { python3 -c 'import json, sys; [print(json.loads(l)[sys.argv[1]]) for l in sys.stdin]' "$1"; }
describe() {
    case $1 in
        256k) echo "$STATIONS stations at once, $BATCHES batches each of 20 x $DOC_KIB KiB" ;;
        4k) echo "$STATIONS stations at once, $BATCHES batches each of 20 x 4 KiB" ;;
        1g) echo "one batch of one document of 1 GiB" ;;
    esac
}
echo
echo "intake: one process sends the forms (scripts/intake-load.py); median of $RUNS runs, servers alternating"
for shape in $SHAPES; do
    for r in $(seq "$RUNS"); do run vault "$shape" "$r"; run php "$shape" "$r"; done
    echo "  $(describe "$shape"):"
    for server in vault php; do
        w=$(field wall < "$work/$server-$shape" | median)
        line=$(python3 - "$work/$server-$shape" "$w" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
m = min(lines, key=lambda l: abs(l["wall"] - float(sys.argv[2])))
cpu = sorted(l["server_cpu"] / (l["bytes"] / 1e9) for l in lines)[len(lines) // 2]
load = sorted(l["load_cpu"] / (l["bytes"] / 1e9) for l in lines)[len(lines) // 2]
print("%6.2f s %6.3f GB/s %7.1f batches/s %6.2f CPU s/GB (the load: %.2f)" % (
    m["wall"], m["bytes"] / m["wall"] / 1e9, m["batches"] / m["wall"], cpu, load))
PY
)
        name="vault receive (checked, encrypted, fsynced, signed)"
        [ "$server" = php ] && name="php -S, 4 workers, \$_FILES moved to disk"
        printf "    %-52s %s\n" "$name" "$line"
        eval "wall_${server}_${shape}=$w"
    done
    awk -v v="$(eval echo "\$wall_vault_$shape")" -v p="$(eval echo "\$wall_php_$shape")" \
        'BEGIN { printf "    -> vault receive takes batches at %.2fx the rate of PHP'"'"'s server in this run\n", p / v }'
    if [ "$shape" = 1g ] && [ -x "$fixture" ]; then
        # The same body as the load sends, from a file; the floor reads it as the receiver would.
        python3 -c '
import importlib.util, os, shutil, sys
spec = importlib.util.spec_from_file_location("load", sys.argv[1]); m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
with open(sys.argv[3], "wb") as out:
    out.write(m.part_head("files[]", os.path.basename(sys.argv[2])))
    with open(sys.argv[2], "rb") as f: shutil.copyfileobj(f, out, 1 << 20)
    out.write(("\r\n--%s--\r\n" % m.BOUNDARY).encode())
' "$root/scripts/intake-load.py" "$work/docs/big.bin" "$work/big-body"
        for r in $(seq "$RUNS"); do "$fixture" --floor "$work/big-body" "$work/big-sealed" >> "$work/floor"; done
        rm -f "$work/big-body" "$work/big-sealed"
        fc=$(python3 -c 'import json, sys; v = sorted(json.loads(l)["cpu"] / (json.loads(l)["bytes"] / 1e9) for l in open(sys.argv[1])); print(v[len(v) // 2])' "$work/floor")
        vc=$(python3 -c 'import json, sys; v = sorted(json.loads(l)["server_cpu"] / (json.loads(l)["bytes"] / 1e9) for l in open(sys.argv[1])); print(v[len(v) // 2])' "$work/vault-1g")
        awk -v f="$fc" -v v="$vc" 'BEGIN { printf "    the work'"'"'s own floor (find, hash twice, encrypt, write, fsync): %.2f CPU s/GB; vault receive is at %.2fx it\n", f, v / f }'
    fi
done
stored=$("$vault" list --json 2>/dev/null | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')
echo "  (the receiver's vault holds $stored documents after the runs: every batch stored, none twice)"
echo "  (vault receive's peak resident memory over every shape: $(awk '/^VmHWM/ { printf "%.0f MiB", $2 / 1024 }' "/proc/$receiver/status"))"

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
