#!/usr/bin/env bash
# Installs the test peers this project did not write, into .build-peers/ (git-ignored):
# the `rncryptor` package from PyPI (an independent RNCryptor v3 implementation, for the
# import interoperability tests), in a virtual environment.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=.build-peers/venv
if ! "$venv/bin/python" -c "import rncryptor" 2>/dev/null; then
    echo "vault: installing the test peer rncryptor==3.3.0 into $venv" >&2
    python3 -m venv "$venv" 2>/dev/null || {
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
    "$venv/bin/pip" install -q rncryptor==3.3.0
fi
