#!/usr/bin/env bash
# `make demo`: the main job on the sample documents in Fixtures/documents, in a throwaway vault.
set -euo pipefail
vault="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
here="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/vault-demo-XXXXXX")"
trap 'rm -rf "$work"' EXIT

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

step "VAULT_PASSWORD=wrong vault list   # a wrong password is refused before any document is read"
VAULT_PASSWORD=wrong "$vault" list || echo "(exit code $?)"
