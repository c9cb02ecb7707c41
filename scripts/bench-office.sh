#!/usr/bin/env bash
# Part of `make bench` (also runs alone: scripts/bench-office.sh .build/release/vault): the
# operator's pages of an office holding OFFICE_DOCS documents (default 100,000; docs/PERFORMANCE.md,
# "The operator's pages").
# Method: the office is made by vault-fixture (VAULT_FIXTURE_OFFICE=1: batches of 20 documents of
# 4 KiB committed as `vault receive` commits them, from three stations in turn), on disk, in the
# page cache. `vault receive` serves it; an operator signs in with curl; each page is fetched
# RUNS times (default 5) after a first request and the median of curl's time_total is shown
# beside the first (a tag's first query makes the map of every tag from the index),
# with the receiver's peak RSS at the end. The first request after the receiver starts (or after
# a batch is committed) reads the history into the receiver's book: that one is shown apart.
set -euo pipefail
vault="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
fixture="$(dirname "$vault")/vault-fixture"
root="$(cd "$(dirname "$0")/.." && pwd)"
RUNS="${RUNS:-5}"
DOCS="${OFFICE_DOCS:-100000}"
work="$(mktemp -d "${BENCH_DIR:-/var/tmp}/vault-bench-office-XXXXXX")"
receiver_pid=
trap '[ -n "$receiver_pid" ] && kill "$receiver_pid" 2>/dev/null; rm -rf "$work"' EXIT
export VAULT_PASSWORD="bench password"
[ -x "$fixture" ] || (cd "$root" && swift build -c release --product vault-fixture >/dev/null)
cd "$work"

"$vault" init --vault office -q
for s in north east south; do "$vault" receive --vault office station add "$s" >/dev/null 2>&1; done
printf 'an operator password for the bench\n' > operator-password
"$vault" receive --vault office operator add alice --new-password-file operator-password >/dev/null 2>&1
start=$(date +%s.%N)
VAULT_FIXTURE_OFFICE=1 "$fixture" office "$DOCS" 20
made=$(echo "$(date +%s.%N) - $start" | bc)

"$vault" receive --vault office --listen 127.0.0.1:0 > receiver.out 2> receiver.err &
receiver_pid=$!
for _ in $(seq 600); do [ -s receiver.out ] && break; sleep 0.1; done
url=$(head -1 receiver.out | sed 's/^listening on //')
curl -s -c jar "$url/ui/login" > login.html
csrf=$(grep -o 'name="csrf" value="[0-9a-f]*"' login.html | head -1 | sed 's/.*value="//; s/"$//')
curl -s -b jar -c jar --data-urlencode "csrf=$csrf" --data-urlencode name=alice \
    --data-urlencode "password=an operator password for the bench" "$url/ui/login" -o /dev/null

# fetch PATH: seconds for one request.
fetch() { curl -s -b jar -o page.html -w '%{time_total}' "$url$1"; }
first=$(fetch "/ui/documents")
echo "the operator's pages of an office of $DOCS documents (made in ${made%.*} s by vault-fixture):"
printf '  %-52s %6.3f s (the book was read as the receiver started)\n' "first page after the start" "$first"
for path in "/ui/documents" "/ui/documents?q=doc-99999" "/ui/documents?station=north&page=600" \
    "/ui/documents?tag=t3&page=50" "/ui/documents?q=inbox&from=2026-01-01&to=2030-01-01" \
    "/ui/batches?page=100" "/ui/stations/north" "/ui/"; do
    once=$(fetch "$path")
    times=""
    for _ in $(seq "$RUNS"); do times="$times $(fetch "$path")"; done
    median=$(echo $times | tr ' ' '\n' | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p")
    printf '  %-52s first %6.3f s, then %6.3f s\n' "$path" "$once" "$median"
done
echo "  receiver's peak RSS: $(awk '/VmHWM/ { print $2 " " $3 }' /proc/$receiver_pid/status)"
