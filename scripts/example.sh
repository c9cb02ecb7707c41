#!/bin/sh
# `make example`: runs the example app (Examples/CaptureApp) against a back office on 127.0.0.1:
# scripts/receiver.py on a port the OS picks, storing what it accepts into a scratch folder.
# The receiver is stopped by its PID whatever the app's outcome; the app's exit status is ours.
# Usage: scripts/example.sh CAPTURE-APP-BINARY
set -eu
app=$1
work=$(mktemp -d "${TMPDIR:-/tmp}/capture-example.XXXXXX")
pid=
cleanup() {
    if [ -n "$pid" ]; then kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT INT TERM
mkdir "$work/received"
python3 "$(dirname "$0")/receiver.py" --port 0 --port-file "$work/port" --store "$work/received" --quiet &
pid=$!
# The port file appears once the receiver listens (two minutes at most on a loaded machine).
tries=0
while [ ! -s "$work/port" ]; do
    if ! kill -0 "$pid" 2>/dev/null; then echo "vault: the example's back office (scripts/receiver.py) did not start" >&2; exit 1; fi
    tries=$((tries + 1))
    if [ "$tries" -gt 1200 ]; then echo "vault: the example's back office did not listen within 2 minutes" >&2; exit 1; fi
    sleep 0.1
done
CAPTURE_APP_BACK_OFFICE="http://127.0.0.1:$(cat "$work/port")/batches" CAPTURE_APP_RECEIVED="$work/received" "$app"
