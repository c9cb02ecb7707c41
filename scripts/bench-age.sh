#!/usr/bin/env bash
# Part of `make bench` (also runs alone: scripts/bench-age.sh .build/release/vault):
# vault against age on the same data, path by path, with equal durability where vault promises
# it (add fsyncs; so does the peer, `sync FILE` after age).
# Method: RUNS (default 5) alternating runs of vault and the peer, after `sync`; for each side
# the median wall time, and the median CPU (user + sys) and sys seconds per GB of plaintext
# (10^9 bytes), all from GNU time. ratio = peer's median wall / vault's (> 1: vault is faster).
set -euo pipefail
vault="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
RUNS="${RUNS:-5}"
work="$(mktemp -d "${BENCH_DIR:-/var/tmp}/vault-bench-age-XXXXXX")"
trap 'rm -rf "$work"' EXIT
if ! command -v age >/dev/null 2>&1; then
    echo "(age is not installed: no head-to-head figures; 'apt-get install age')"
    exit 0
fi
export VAULT_PASSWORD="bench password"
age-keygen -o "$work/key.txt" 2>/dev/null
recipient=$(grep -o 'age1[0-9a-z]*' "$work/key.txt")

# Each run starts with a cold page cache where this user may drop it (root), as on a busy
# machine whose cache is reclaimed quickly: inputs are read from the disk, by both sides. The
# programs themselves are then loaded again by a tiny run of each (vault and its shared
# libraries are 200 MB against age's 4 MB: loading them cold took 0.15 s, which is not what
# a user who runs vault daily waits for).
cold=false
if [ -w /proc/sys/vm/drop_caches ]; then cold=true; fi
warm_programs() {
    VAULT_DIR="$work/scratch" "$vault" export --out - --progress none -q >/dev/null
    echo warm | age -r "$recipient" | age -d -i "$work/key.txt" >/dev/null
    echo warm | base64 -w0 >/dev/null
}
# timed FILE CMD...: one run, appends "wall user sys" to FILE.
timed() {
    local out=$1; shift
    sync
    if $cold; then echo 1 > /proc/sys/vm/drop_caches; warm_programs; fi
    /usr/bin/time -q -o "$work/time" -f '%e %U %S' "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }
    tail -1 "$work/time" >> "$out"
}
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# duel NAME BYTES UNIT COUNT: runs "$A" and "$B" (shell commands) alternately RUNS times, with
# "$A_AFTER" / "$B_AFTER" after each; prints both sides and the ratio. UNIT is MB/s or files/s
# (COUNT files).
duel() {
    local name=$1 bytes=$2 unit=$3 count=${4:-0}
    : > "$work/a"; : > "$work/b"
    for _ in $(seq "$RUNS"); do
        timed "$work/a" sh -c "$A"; eval "${A_AFTER:-:}"
        timed "$work/b" sh -c "$B"; eval "${B_AFTER:-:}"
    done
    local side
    for side in a b; do
        local wall cpu sys label
        wall=$(awk '{ print $1 }' "$work/$side" | median)
        cpu=$(awk '{ print $2 + $3 }' "$work/$side" | median)
        sys=$(awk '{ print $3 }' "$work/$side" | median)
        [ "$side" = a ] && label="  vault: $A_NAME" || label="  peer:  $B_NAME"
        awk -v l="$label" -v w="$wall" -v c="$cpu" -v s="$sys" -v b="$bytes" -v u="$unit" -v n="$count" 'BEGIN {
            rate = (u == "files/s") ? n / w : b / w / 1e6
            printf "%-58s %7.2f s %8.0f %-7s %6.2f CPU s/GB %6.2f sys s/GB\n", l, w, rate, u, c / (b / 1e9), s / (b / 1e9) }'
        eval "wall_$side=$wall"
    done
    awk -v a="$wall_a" -v b="$wall_b" -v n="$name" -v goal="$GOAL" 'BEGIN { printf "  -> %s: vault is %.2fx the peer in this run (%s)\n", n, b / a, goal }'
}

VAULT_DIR="$work/scratch" "$vault" init --kdf interactive 2>/dev/null
echo warm > "$work/warm.txt"
VAULT_DIR="$work/scratch" "$vault" add "$work/warm.txt" >/dev/null
echo
echo "head to head with age: median of $RUNS alternating runs; CPU and sys seconds per GB of plaintext;"
$cold && echo "page cache dropped before every run, then the programs loaded again (inputs come from the disk)" || echo "page cache as it is (not root: cannot drop it)"

# --- add of one 512 MiB file, durable ------------------------------------------------------------
export VAULT_DIR="$work/vault"
"$vault" init --kdf interactive 2>/dev/null
head -c $((512 << 20)) /dev/urandom > "$work/big.bin"
A_NAME="vault add (SHA-256, seal, fsync file + dir, index, log)" A="'$vault' add --allow-duplicate '$work/big.bin'" \
A_AFTER='rm -f "$VAULT_DIR"/objects/*.vlt "$VAULT_DIR"/index.vlt' \
B_NAME="age -r -o F && sync F" B="age -r $recipient -o '$work/big.age' '$work/big.bin' && sync '$work/big.age'" \
B_AFTER='rm -f "$work/big.age"' GOAL="goal >= 1.0, 1.2 ideal" duel "add 512 MiB" $((512 << 20)) MB/s
rm -f "$work/big.bin"
rm -rf "$VAULT_DIR"

# --- export of 20 x 50 MiB: to a folder, and to a pipe ---------------------------------------------
export VAULT_DIR="$work/vault20"
"$vault" init --kdf interactive 2>/dev/null
docs="$work/docs"; mkdir -p "$docs"
for i in $(seq -w 1 20); do head -c $((50 << 20)) /dev/urandom > "$docs/doc$i.bin"; done
"$vault" add "$docs"/doc*.bin >/dev/null
for f in "$docs"/doc*.bin; do age -r "$recipient" -o "$f.age" "$f"; rm -f "$f"; done
cat > "$work/pipeline.sh" <<PIPE
set -e
{ printf '{"Files":['; sep=
  for f in "$docs"/doc*.bin.age; do printf '%s"' "\$sep"; age -d -i "$work/key.txt" "\$f" | base64 -w0; printf '"'; sep=,; done
  printf ']}'; }
PIPE
A_NAME="vault export --out DIR" A="'$vault' export --out '$work/out' --progress none -q" A_AFTER='rm -rf "$work/out"' \
B_NAME="age -d | base64 -w0 into {\"Files\":[...]} > FILE" B="sh '$work/pipeline.sh' > '$work/pipeline.json'" \
B_AFTER='rm -f "$work/pipeline.json"' GOAL="goal >= 1.5, 2 ideal" duel "export 20 x 50 MiB to a folder" $((20 * (50 << 20))) MB/s
A_NAME="vault export --out - | cat" A="'$vault' export --out - --progress none -q | cat > /dev/null" A_AFTER=: \
B_NAME="the same pipeline | cat" B="sh '$work/pipeline.sh' | cat > /dev/null" B_AFTER=: \
GOAL="goal >= 2" duel "export 20 x 50 MiB to a pipe" $((20 * (50 << 20))) MB/s
# Sealed delivery (issue 43): the same export sealed to an age recipient (one more
# ChaCha20-Poly1305 pass over the data), against the plain export, and against sealing the
# plain export's stream with age -r after it.
A_NAME="vault export --out - --recipient R | cat" A="'$vault' export --out - --progress none -q --recipient $recipient | cat > /dev/null" A_AFTER=: \
B_NAME="vault export --out - | cat (plain)" B="'$vault' export --out - --progress none -q | cat > /dev/null" B_AFTER=: \
GOAL="sealed / plain: goal >= 0.75" duel "sealed export 20 x 50 MiB to a pipe" $((20 * (50 << 20))) MB/s
A_NAME="vault export --out - --recipient R | cat" A="'$vault' export --out - --progress none -q --recipient $recipient | cat > /dev/null" A_AFTER=: \
B_NAME="vault export --out - | age -r R | cat" B="'$vault' export --out - --progress none -q | age -r $recipient | cat > /dev/null" B_AFTER=: \
GOAL="goal > 1: ahead of age fed by the plain export" duel "sealed export vs age -r after the export" $((20 * (50 << 20))) MB/s
rm -rf "$docs" "$VAULT_DIR"

# --- many small documents: 2,000 files of 4 KiB ----------------------------------------------------
export VAULT_DIR="$work/vault-small"
"$vault" init --kdf interactive 2>/dev/null
small="$work/small"; mkdir -p "$small"
for i in $(seq 2000); do head -c 4096 /dev/urandom > "$small/f$i.bin"; done
A_NAME="vault add -r (durable when it exits)" A="'$vault' add -r --allow-duplicate '$small'" \
A_AFTER='rm -f "$VAULT_DIR"/objects/*.vlt "$VAULT_DIR"/index.vlt' \
B_NAME="age -r, once per file, then sync of each" B="for f in '$small'/*.bin; do age -r $recipient -o \"\$f.age\" \"\$f\" && sync \"\$f.age\"; done" \
B_AFTER='rm -f "$small"/*.age' GOAL="per-file age runs" duel "add 2,000 x 4 KiB" $((2000 * 4096)) files/s 2000
"$vault" add -r "$small" >/dev/null
for f in "$small"/*.bin; do age -r "$recipient" -o "$f.age" "$f"; done
cat > "$work/pipeline-small.sh" <<PIPE
set -e
{ printf '{"Files":['; sep=
  for f in "$small"/*.bin.age; do printf '%s"' "\$sep"; age -d -i "$work/key.txt" "\$f" | base64 -w0; printf '"'; sep=,; done
  printf ']}'; }
PIPE
A_NAME="vault export --out DIR (100 batch files)" A="'$vault' export --out '$work/out' --progress none -q" A_AFTER='rm -rf "$work/out"' \
B_NAME="age -d | base64 -w0 per file into one payload" B="sh '$work/pipeline-small.sh' > '$work/pipeline.json'" \
B_AFTER='rm -f "$work/pipeline.json"' GOAL="per-file age runs" duel "export 2,000 x 4 KiB" $((2000 * 4096)) files/s 2000
rm -rf "$small" "$VAULT_DIR"
echo "add: vault hashes (SHA-256) and seals (XChaCha20-Poly1305) on both cores while it reads ahead, runs Argon2id"
echo "(interactive) beside the first file, fsyncs the object and objects/, and rewrites the index and log; age"
echo "(X25519 recipient, no KDF) seals on one core. export: vault decrypts, authenticates, base64-encodes and"
echo "hashes the payload for its manifest; the pipeline runs one age and one base64 process per document."
