#!/usr/bin/env bash
# `make demo`: the main job on the sample documents in Fixtures/documents, in a throwaway vault.
set -euo pipefail
vault="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/vault-demo-XXXXXX")"
receiver_pid=
php_pid=
office_pid=
stop_peers() {
    for pid in $receiver_pid $php_pid $office_pid; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap stop_peers EXIT

export VAULT_DIR="$work/vault"
export VAULT_PASSWORD="demo password (never use a password from an example)"
if [ -t 1 ]; then bold=$'\033[1m'; plain=$'\033[0m'; else bold=; plain=; fi
step() { printf '\n%s$ %s%s\n' "$bold" "$*" "$plain"; }

step vault init --kdf interactive
"$vault" init --kdf interactive

step vault add --tag demo Fixtures/documents/*
(cd "$here" && "$vault" add --tag demo Fixtures/documents/*)

step vault list
"$vault" list

step vault get receipt.jpg -o "\$work/receipt.jpg"
"$vault" get receipt.jpg -o "$work/receipt.jpg"
cmp "$work/receipt.jpg" "$here/Fixtures/documents/receipt.jpg" && echo "receipt.jpg: identical to the original"

step vault verify
"$vault" verify

step vault export --tag demo --batch-size 4 --out "\$work/outbox" --progress bar
"$vault" export --tag demo --batch-size 4 --out "$work/outbox" --progress bar
ls -l "$work/outbox"
python3 - "$work/outbox" <<'PY'
import base64, glob, hashlib, json, os, sys
for path in sorted(glob.glob(os.path.join(sys.argv[1], "batch-*.json"))):
    files = json.load(open(path))["Files"]
    ok = all(hashlib.sha256(base64.b64decode(f["Data"])).hexdigest() == f["SHA256"] for f in files)
    print(f"{os.path.basename(path)}: {len(files)} documents, every SHA-256 checks: {ok}")
PY

# A local back office: the test receiver on 127.0.0.1, on a port the OS picks. Its first
# answer is an injected 503, to show a retry.
echo '[{"action": "status", "status": 503, "retryAfter": 1}]' > "$work/plan.json"
python3 "$here/scripts/receiver.py" --port-file "$work/port" --store "$work/received" --token demo-token \
    --fault-plan "$work/plan.json" --quiet &
receiver_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
url="http://127.0.0.1:$(cat "$work/port")/batches"

step "VAULT_UPLOAD_TOKEN=… vault upload --url $url --batch-size 4 --progress bar"
VAULT_UPLOAD_TOKEN=demo-token "$vault" upload --url "$url" --batch-size 4 --progress bar
echo "the receiver checked every document's SHA-256 and stored $(ls "$work/received" | wc -l) documents"

step "vault upload --url $url --batch-size 4   # again: the back office confirmed every document, nothing new goes"
VAULT_UPLOAD_TOKEN=demo-token "$vault" upload --url "$url" --batch-size 4

step "vault status   # the delivery ledger: what each destination has"
"$vault" status

# A PHP back office: PHP's built-in server and its own multipart parser (when php is installed).
if command -v php >/dev/null 2>&1; then
    php_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    mkdir -p "$work/php"
    FORM_STORE="$work/php" FORM_TOKEN=demo-token php -n -d max_file_uploads=20 -d post_max_size=8M -d upload_max_filesize=8M \
        -d display_errors=0 -d upload_tmp_dir="$work/php" -S "127.0.0.1:$php_port" "$here/scripts/form-receiver.php" >/dev/null 2>&1 &
    php_pid=$!
    for _ in $(seq 100); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $php_port), 0.2)" 2>/dev/null && break; sleep 0.05; done
    step "VAULT_UPLOAD_TOKEN=… vault upload --url http://127.0.0.1:$php_port/upload.php --protocol form --form-field case=demo"
    VAULT_UPLOAD_TOKEN=demo-token "$vault" upload --url "http://127.0.0.1:$php_port/upload.php" --protocol form --form-field case=demo
    echo "PHP's \$_FILES took $(ls "$work/php" | grep -c '^[0-9a-f]\{32\}$') documents; each file's size and SHA-256 matched the manifest part"
fi

step "VAULT_PASSWORD=wrong vault list   # a wrong password is refused before any document is read"
VAULT_PASSWORD=wrong "$vault" list || echo "(exit code $?)"

step "vault log   # every change and delivery, sealed and chained"
"$vault" log | cut -c1-110 | grep -v '^         [0-9a-f]\{32\}' || true

step "vault audit --head > head.txt && vault audit --expect-head \"\$(cat head.txt)\""
"$vault" audit --head > "$work/head.txt"
"$vault" audit --expect-head "$(cat "$work/head.txt")"

step "rm \$VAULT_DIR/objects/<receipt.jpg's object> && vault audit   # deleted behind the vault's back"
id=$("$vault" list --json | python3 -c 'import json,sys; print(next(d["id"] for d in json.load(sys.stdin) if d["name"] == "receipt.jpg"))')
cp "$VAULT_DIR/objects/$id.vlt" "$work/saved.vlt"
rm "$VAULT_DIR/objects/$id.vlt"
"$vault" audit || echo "(exit code $?)"
cp "$work/saved.vlt" "$VAULT_DIR/objects/$id.vlt"

step "VAULT_NEW_PASSWORD=… vault passwd   # a new vault key (key epoch 1) and re-sealed headers; payloads are not rewritten"
VAULT_NEW_PASSWORD="another demo password" "$vault" passwd
VAULT_PASSWORD="another demo password" "$vault" audit --deep
export VAULT_PASSWORD="another demo password"

# The other end: `vault receive`, a back office with a vault of its own, signing for each batch.
office="$work/office"
export office_password="office password (demo)"
step "vault init --vault \$work/office && vault receive --vault \$work/office station add front-desk"
VAULT_PASSWORD="$office_password" "$vault" init --vault "$office" --kdf interactive
token=$(VAULT_PASSWORD="$office_password" "$vault" receive --vault "$office" station add front-desk)
key=$(VAULT_PASSWORD="$office_password" "$vault" receive --vault "$office" key)
echo "the station's token: ${token:0:8}…   the office's receipt key: $key"

step "vault keygen --out \$work/office.key   # an age identity: batches travel sealed to its recipient"
recipient=$("$vault" keygen --out "$work/office.key")
echo "$recipient"

step "vault receive --vault \$work/office --listen 127.0.0.1:0 --identity \$work/office.key &"
VAULT_PASSWORD="$office_password" "$vault" receive --vault "$office" --listen 127.0.0.1:0 --identity "$work/office.key" \
    > "$work/office.out" 2> "$work/office.log" &
office_pid=$!
for _ in $(seq 200); do [ -s "$work/office.out" ] && break; sleep 0.05; done
head -1 "$work/office.out"
office_url="$(head -1 "$work/office.out" | sed 's/^listening on //')/batches"

step "vault destination add office $office_url --receipt-key $key --recipient ${recipient:0:16}… --optional"
"$vault" destination add office "$office_url" --receipt-key "$key" --recipient "$recipient" --optional

step "VAULT_UPLOAD_TOKEN=… vault upload --to office --batch-size 4   # sealed; confirmed only by a signed receipt"
VAULT_UPLOAD_TOKEN="$token" "$vault" upload --to office --batch-size 4
sed 's/^[^ ]* info vault.receive: /  office: /; s/ \[VaultReceive\].*//' "$work/office.log"

step "vault remove --delivered-to office && vault audit --require-receipts office"
"$vault" remove --delivered-to office --yes > /dev/null
"$vault" audit --require-receipts office
"$vault" log --json | python3 -c '
import json, sys
receipts = [json.loads(r["receipt"]) for r in json.load(sys.stdin)["records"] if "receipt" in r]
print("%d receipts in the history, signed for %d documents" % (len(receipts), sum(len(r["receipt"]["documents"]) for r in receipts)))'

step "vault --vault \$work/office list   # the back office's own vault: encrypted at rest, like the station's"
VAULT_PASSWORD="$office_password" "$vault" --vault "$office" list
kill -TERM "$office_pid" && wait "$office_pid" 2>/dev/null || true
office_pid=
