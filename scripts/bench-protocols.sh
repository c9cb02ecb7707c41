#!/usr/bin/env bash
# Part of `make bench` (also runs alone: scripts/bench-protocols.sh .build/release/vault):
# `vault upload --protocol form` to PHP's built-in server and multipart parser, and
# `--protocol tus` to resumable-upload 0.3.0, each beside curl sending the same documents from
# files (curl -F of the plaintexts; a tus creation and one PATCH of the exported payload).
# curl does no decryption; the ratio is vault's rate over curl's in the same run (goal >= 0.8).
# Method: median of RUNS runs (default 3) of each command, wall time from GNU time, peers on
# 127.0.0.1 sharing the two cores; MB/s = 10^6 bytes of plaintext per second.
set -euo pipefail
vault="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
root="$(cd "$(dirname "$0")/.." && pwd)"
RUNS="${RUNS:-3}"
MIB="${MIB:-50}"
work="$(mktemp -d "${BENCH_DIR:-/var/tmp}/vault-bench-proto-XXXXXX")"
pids=()
trap 'for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
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
echo "form: vault decrypts and authenticates each document, curl reads plaintext files; PHP writes every file to"
echo "its upload_tmp_dir and the script hashes and stores it. tus: vault decrypts, base64-encodes, and checksums"
echo "each 4 MiB PATCH (the server verifies it); curl sends the already exported payload in one PATCH, unchecksummed,"
echo "or, in the last row, in the same checksummed 4 MiB PATCHes. This peer's cost per PATCH (a Python HTTP server"
echo "reading, hashing and recording each chunk) bounds any client that sends in chunks."
