#!/usr/bin/env bash
# Part of `make bench` (also runs alone: scripts/bench-protocols.sh .build/release/vault):
# `vault upload --protocol form` to PHP's built-in server and multipart parser, and
# `--protocol tus` to resumable-upload 0.3.0, each beside curl sending the same documents from
# files (curl -F of the plaintexts; a tus creation and one PATCH of the exported payload).
# curl does no decryption; the ratio is vault's rate over curl's in the same run (goal >= 0.8).
# Method: median of RUNS runs (default 3) of each command, wall time from GNU time, peers on
# 127.0.0.1 sharing the two cores; MB/s = 10^6 bytes of plaintext per second.
# `--protocol s3` to SeaweedFS beside `aws s3 cp` of the exported batch files (goal >= 1.0), the two
# run alternately (the store slows as its volumes fill, and both should see the same store).
# Remote vaults on the same SeaweedFS: push of 1 GiB in 200 documents beside `aws s3 sync` of the
# same objects/ folder (goal >= 1.0), and export read in place beside the local export (goal >= 0.6).
# PROTOCOLS="form tus s3 remote" (the default) chooses the sections (remote needs s3's SeaweedFS).
set -euo pipefail
vault="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
root="$(cd "$(dirname "$0")/.." && pwd)"
RUNS="${RUNS:-3}"
MIB="${MIB:-50}"
work="$(mktemp -d "${BENCH_DIR:-/var/tmp}/vault-bench-proto-XXXXXX")"
pids=()
# Peers are stopped by PID before their folders go; SeaweedFS that does not stop on SIGTERM
# within 3 s (it can hang shutting down) is killed.
stop_peers() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    for p in "${pids[@]}"; do
        for _ in $(seq 30); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
    done
    rm -rf "$work"
}
trap stop_peers EXIT
export VAULT_DIR="$work/vault" VAULT_PASSWORD="bench password" VAULT_UPLOAD_TOKEN=bench-token
peer="$root/.build-peers/venv/bin/python"
if ! command -v php >/dev/null 2>&1 || ! command -v curl >/dev/null 2>&1 || [ ! -x "$peer" ]; then
    echo "(php, curl or the tus peer is missing: no protocol figures; 'make peers' and apt-get install curl)"
    exit 0
fi
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 200); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null && return; sleep 0.05; done; echo "peer on port $1 did not start" >&2; exit 1; }
median_of() {
    local results=()
    for _ in $(seq "$RUNS"); do
        [ -n "${BEFORE_EACH:-}" ] && eval "$BEFORE_EACH"
        sync
        /usr/bin/time -q -o "$work/time" -f '%e %M' "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }
        results+=("$(tail -1 "$work/time")")
    done
    printf '%s\n' "${results[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p"
}
row() { awk -v n="$1" -v b="$2" -v s="${3% *}" -v k="${3#* }" 'BEGIN { printf "%-50s %8.2f s %9.0f MB/s %8.1f MiB\n", n, s, b / s / 1e6, k / 1024 }'; }
ratio() { awk -v v="${1% *}" -v c="${2% *}" -v what="$3" 'BEGIN { printf "  -> vault %s is %.2fx curl in this run (goal >= 0.8)\n", what, c / v }'; }

docs="$work/docs"; mkdir -p "$docs"
"$vault" init --kdf interactive 2>/dev/null
for i in $(seq -w 1 20); do head -c $((MIB << 20)) /dev/urandom > "$docs/doc$i.bin"; done
"$vault" add "$docs"/doc*.bin >/dev/null
bytes=$((20 * (MIB << 20)))
echo
printf '%-50s %10s %14s %12s\n' "upload protocols, 20 x $MIB MiB" "time" "throughput" "peak RSS"

want() { case " ${PROTOCOLS:-form tus s3 remote} " in *" $1 "*) return 0 ;; esac; return 1; }
if want form; then
# --- form: PHP's built-in server and multipart parser (files are hashed and stored by the script)
php_port=$(free_port); mkdir -p "$work/php/tmp"
FORM_STORE="$work/php/store" FORM_TOKEN=bench-token php -n -d max_file_uploads=20 -d post_max_size=2G -d upload_max_filesize=2G \
    -d memory_limit=-1 -d display_errors=0 -d upload_tmp_dir="$work/php/tmp" -S "127.0.0.1:$php_port" "$root/scripts/form-receiver.php" >/dev/null 2>&1 &
pids+=($!); wait_port "$php_port"
form_url="http://127.0.0.1:$php_port/upload.php"
BEFORE_EACH='rm -rf "$work/php/store"' r_vault=$(median_of "$vault" upload --url "$form_url" --protocol form --new-run --progress none)
row "vault upload --protocol form (PHP php -S)" $bytes "$r_vault"
# curl -F: the same files with a manifest part the script checks them against.
python3 - "$docs" > "$work/manifest.json" <<'PY'
import hashlib, json, os, sys
d = sys.argv[1]
docs = []
for name in sorted(os.listdir(d)):
    data = open(os.path.join(d, name), "rb").read()
    h = hashlib.sha256(data).hexdigest()
    docs.append({"contentType": "application/octet-stream", "id": h[:32], "name": name, "sha256": h, "size": len(data)})
print(json.dumps({"batch": 1, "documents": docs, "of": 1}))
PY
curl_args=(-s -f -o /dev/null -H "Authorization: Bearer bench-token" -F "manifest=<$work/manifest.json;type=application/json")
for f in "$docs"/doc*.bin; do curl_args+=(-F "files[]=@$f;type=application/octet-stream"); done
BEFORE_EACH='rm -rf "$work/php/store"' r_curl=$(median_of curl "${curl_args[@]}" "$form_url")
row "curl -F, the same 20 files (PHP php -S)" $bytes "$r_curl"
ratio "$r_vault" "$r_curl" "form"

fi
if want tus; then
# --- tus: resumable-upload 0.3.0, sha256 checksums on
tus_port=$(free_port)
"$peer" -m resumable_upload serve --host 127.0.0.1 --port "$tus_port" --upload-dir "$work/tus/up" --db-path "$work/tus/up.db" \
    --checksum-algorithms sha1,sha256 --log-level WARNING >/dev/null 2>&1 &
pids+=($!); wait_port "$tus_port"
tus_url="http://127.0.0.1:$tus_port/files"
BEFORE_EACH='rm -rf "$work/tus/up"/*' r_vault=$(median_of "$vault" upload --url "$tus_url" --protocol tus --new-run --progress none)
row "vault upload --protocol tus (4 MiB PATCHes, sha256)" $bytes "$r_vault"
"$vault" export --out "$work/out" --progress none -q
payload="$work/out/batch-0001.json"
cat > "$work/tus-curl.sh" <<SH
set -e
location=\$(curl -s -f -D - -o /dev/null -X POST -H "Tus-Resumable: 1.0.0" -H "Upload-Length: \$(stat -c %s "$payload")" \
    -H "Authorization: Bearer bench-token" "$tus_url" | tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
case "\$location" in http*) ;; *) location="http://127.0.0.1:$tus_port\$location" ;; esac
curl -s -f -o /dev/null -X PATCH -T "$payload" -H "Tus-Resumable: 1.0.0" -H "Upload-Offset: 0" \
    -H "Content-Type: application/offset+octet-stream" "\$location"
SH
BEFORE_EACH='rm -rf "$work/tus/up"/*' r_curl=$(median_of sh "$work/tus-curl.sh")
row "curl: tus creation + one PATCH of the exported payload" $bytes "$r_curl"
ratio "$r_vault" "$r_curl" "tus"
# The same protocol work as vault: 4 MiB PATCHes, each with its sha256 Upload-Checksum.
split -b 4194304 -d -a 5 "$payload" "$work/part."
cat > "$work/tus-curl-chunks.sh" <<SH
set -e
location=\$(curl -s -f -D - -o /dev/null -X POST -H "Tus-Resumable: 1.0.0" -H "Upload-Length: \$(stat -c %s "$payload")" \
    -H "Authorization: Bearer bench-token" "$tus_url" | tr -d '\r' | sed -n 's/^[Ll]ocation: //p')
case "\$location" in http*) ;; *) location="http://127.0.0.1:$tus_port\$location" ;; esac
offset=0
for part in "$work"/part.*; do
    curl -s -f -o /dev/null -X PATCH --data-binary @"\$part" -H "Tus-Resumable: 1.0.0" -H "Upload-Offset: \$offset" \
        -H "Content-Type: application/offset+octet-stream" \
        -H "Upload-Checksum: sha256 \$(openssl dgst -sha256 -binary "\$part" | base64 -w0)" "\$location"
    offset=\$((offset + \$(stat -c %s "\$part")))
done
SH
BEFORE_EACH='rm -rf "$work/tus/up"/*' r_chunks=$(median_of sh "$work/tus-curl-chunks.sh")
row "curl: the same 4 MiB PATCHes with sha256 checksums" $bytes "$r_chunks"
ratio "$r_vault" "$r_chunks" "tus (equal protocol work)"

fi
if want s3; then
# --- s3: SeaweedFS 4.48 (weed mini, telemetry off, ports chosen here), beside `aws s3 cp`
weed="$root/.build-peers/venv/bin/weed"
aws_cli="$(command -v aws || true)"
if [ -z "$aws_cli" ]; then
    # awscli 1.45.11 goes with the botocore the tests pin; into the same git-ignored venv.
    [ -x "$root/.build-peers/venv/bin/aws" ] || "$root/.build-peers/venv/bin/pip" install -q awscli==1.45.11
    aws_cli="$root/.build-peers/venv/bin/aws"
fi
if [ -x "$weed" ]; then
    mkdir -p "$work/sw/data"
    echo '{"identities":[{"name":"bench","credentials":[{"accessKey":"BENCHKEY","secretKey":"bench-secret"}],"actions":["Admin","Read","Write","List"]}]}' > "$work/sw/s3.json"
    p=(); for _ in $(seq 10); do p+=("$(free_port)"); done
    "$weed" mini -dir="$work/sw/data" -ip=127.0.0.1 -ip.bind=127.0.0.1 -master.telemetry=false -admin.ui=false -webdav=false \
        -s3.config="$work/sw/s3.json" -master.volumeSizeLimitMB=1024 -s3.port.iceberg=0 -s3.port.lance=0 -s3.port="${p[0]}" \
        -s3.port.grpc="${p[1]}" -master.port="${p[2]}" -master.port.grpc="${p[3]}" -volume.port="${p[4]}" -volume.port.grpc="${p[5]}" \
        -filer.port="${p[6]}" -filer.port.grpc="${p[7]}" -admin.port="${p[8]}" -admin.port.grpc="${p[9]}" >"$work/sw/log" 2>&1 &
    pids+=($!); wait_port "${p[0]}"
    export AWS_ACCESS_KEY_ID=BENCHKEY AWS_SECRET_ACCESS_KEY=bench-secret AWS_REGION=us-east-1 AWS_ENDPOINT_URL="http://127.0.0.1:${p[0]}"
    for _ in $(seq 100); do "$aws_cli" s3 mb s3://bench >/dev/null 2>&1 && break; sleep 0.2; done
    # aws s3 cp of the batch files vault export writes for the same documents (its defaults: 8 MiB parts, 10 threads).
    rm -rf "$work/out"; "$vault" export --out "$work/out" --progress none -q; rm -f "$work/out"/*manifest*
    # Alternating runs: the store's own pace drifts as its volumes fill, and both see the same drift.
    vs=(); as=()
    for _ in $(seq "$RUNS"); do
        vs+=("$(RUNS=1 median_of "$vault" upload --url s3://bench/vault --new-run --parallel 2 --progress none)")
        as+=("$(RUNS=1 median_of "$aws_cli" s3 cp --recursive --only-show-errors "$work/out" s3://bench/aws)")
    done
    r_vault=$(printf '%s\n' "${vs[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
    r_aws=$(printf '%s\n' "${as[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
    row "vault upload --protocol s3 --parallel 2 (SeaweedFS)" $bytes "$r_vault"
    row "aws s3 cp --recursive of the exported batch files" $bytes "$r_aws"
    awk -v v="${r_vault% *}" -v c="${r_aws% *}" 'BEGIN { printf "  -> vault s3 is %.2fx aws s3 cp in this run (goal >= 1.0)\n", c / v }'
    # Peak RSS growth from one 1 MiB document to the 20 x 50 MiB above (goal <= 16 MiB).
    export VAULT_DIR="$work/small"; "$vault" init --kdf interactive 2>/dev/null
    head -c 1048576 /dev/urandom > "$work/one.bin"; "$vault" add "$work/one.bin" >/dev/null
    r_small=$(median_of "$vault" upload --url s3://bench/small --new-run --parallel 2 --progress none)
    export VAULT_DIR="$work/vault"
    awk -v a="${r_small#* }" -v b="${r_vault#* }" 'BEGIN { printf "  -> peak RSS %.1f MiB for 1 x 1 MiB, %.1f MiB for 20 x 50 MiB: growth %.1f MiB (goal <= 16)\n", a / 1024, b / 1024, (b - a) / 1024 }'
else
    echo "(SeaweedFS is missing: no S3 figures; 'make peers')"
fi
fi

if want remote && [ -n "${AWS_ENDPOINT_URL:-}" ]; then
# --- remote vaults on the same SeaweedFS: push beside aws s3 sync, direct export beside local export
echo
printf '%-50s %10s %14s %12s\n' "remote vaults (SeaweedFS)" "time" "throughput" "peak RSS"
# 1 GiB in 200 documents of 5 MiB + a bit, in their own vault; each run pushes to a fresh prefix.
export VAULT_DIR="$work/stations"; "$vault" init --kdf interactive 2>/dev/null
mkdir -p "$work/st"; for i in $(seq -w 1 200); do head -c 5368709 /dev/urandom > "$work/st/d$i.bin"; done
"$vault" add "$work/st"/d*.bin >/dev/null; rm -rf "$work/st"
push_bytes=$(du -sb "$VAULT_DIR/objects" | cut -f1)
echo 0 > "$work/n"
next='n=$(( $(cat "$0") + 1 )); echo $n > "$0";'
r_push=$(median_of bash -c "$next"' exec "$1" push "s3://bench/push$n" --progress none -q' "$work/n" "$vault")
row "vault push (200 documents, 1 GiB)" "$push_bytes" "$r_push"
r_sync=$(median_of bash -c "$next"' exec "$1" s3 sync --only-show-errors "$2" "s3://bench/sync$n/objects/"' "$work/n" "$aws_cli" "$VAULT_DIR/objects")
row "aws s3 sync of the same objects/ folder" "$push_bytes" "$r_sync"
awk -v v="${r_push% *}" -v c="${r_sync% *}" 'BEGIN { printf "  -> vault push is %.2fx aws s3 sync in this run (goal >= 1.0)\n", c / v }'
# Export of the 20 x 50 MiB vault read in place from the store, beside the same export from disk.
export VAULT_DIR="$work/vault"; "$vault" push s3://bench/rv-big --progress none -q
export XDG_CACHE_HOME="$work/cache"
r_local=$(BEFORE_EACH='rm -rf "$work/out"' median_of "$vault" export --out "$work/out" --progress none -q)
r_direct=$(BEFORE_EACH='rm -rf "$work/out"' median_of "$vault" --vault s3://bench/rv-big export --out "$work/out" --progress none -q)
row "vault export (local vault)" $bytes "$r_local"
row "vault --vault s3://… export (read in place)" $bytes "$r_direct"
awk -v v="${r_direct% *}" -v c="${r_local% *}" 'BEGIN { printf "  -> export in place is %.2fx the local export in this run (goal >= 0.6)\n", c / v }'
export VAULT_DIR="$work/small"; "$vault" push s3://bench/rv-small --progress none -q
r_dsmall=$(BEFORE_EACH='rm -rf "$work/out"' median_of "$vault" --vault s3://bench/rv-small export --out "$work/out" --progress none -q)
export VAULT_DIR="$work/vault"
awk -v a="${r_dsmall#* }" -v b="${r_direct#* }" 'BEGIN { printf "  -> peak RSS %.1f MiB for 1 x 1 MiB, %.1f MiB for 20 x 50 MiB: growth %.1f MiB (goal <= 8 + the 64 MiB cache)\n", a / 1024, b / 1024, (b - a) / 1024 }'
echo "push: vault lists the store and sends each envelope (4 in flight, If-None-Match: *, Content-MD5); aws s3 sync"
echo "lists it and sends the same files from 10 threads. Export in place: the store is listed, vault.json and the"
echo "headers come from the sealed index cache after the first run, and the envelopes are read by ranged GETs of up"
echo "to 16 MiB, two ahead; SeaweedFS serves them from the same two cores (about 1.6 s of its CPU per GB)."
fi

echo "form: vault decrypts and authenticates each document, curl reads plaintext files; PHP writes every file to"
echo "its upload_tmp_dir and the script hashes and stores it. tus: vault decrypts, base64-encodes, and checksums"
echo "each 4 MiB PATCH (the server verifies it); curl sends the already exported payload in one PATCH, unchecksummed,"
echo "or, in the last row, in the same checksummed 4 MiB PATCHes. This peer's cost per PATCH (a Python HTTP server"
echo "reading, hashing and recording each chunk) bounds any client that sends in chunks. s3: vault decrypts,"
echo "base64-encodes and MD5s each 8 MiB part while it sends (2 in flight); aws s3 cp reads the already exported files"
echo "and sends 8 MiB parts from 10 threads. SeaweedFS (master, volume, filer and S3 gateway in one process) shares the cores."
