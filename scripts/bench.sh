#!/usr/bin/env bash
# `make bench`: throughput and peak memory of vault on generated data, beside age.
# Figures, not pass/fail. Method: whole-process wall time and peak RSS from GNU time; the
# median of RUNS runs (default 3) after `sync`; inputs in the page cache; MB/s = 10^6 bytes of
# plaintext per second. vault runs with --kdf interactive (age's recipient mode has no KDF).
set -euo pipefail
vault="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
RUNS="${RUNS:-3}"
work="$(mktemp -d "${BENCH_DIR:-/var/tmp}/vault-bench-XXXXXX")"
trap 'rm -rf "$work"' EXIT
export VAULT_DIR="$work/vault" VAULT_PASSWORD="bench password"

# median_of CMD...: runs CMD $RUNS times; prints "seconds peakKiB" of the median run.
median_of() {
    local results=()
    for _ in $(seq "$RUNS"); do
        sync
        /usr/bin/time -q -o "$work/time" -f '%e %M' "$@" >/dev/null 2>"$work/stderr" || { cat "$work/stderr" >&2; return 1; }
        results+=("$(tail -1 "$work/time")")
        [ -n "${AFTER_EACH:-}" ] && eval "$AFTER_EACH"
    done
    printf '%s\n' "${results[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p"
}
row() { # name bytes "seconds kib"
    local s=${3% *} k=${3#* }
    awk -v n="$1" -v b="$2" -v s="$s" -v k="$k" 'BEGIN { printf "%-44s %8.2f s %9.0f MB/s %8.1f MiB\n", n, s, b / s / 1e6, k / 1024 }'
}

echo "vault bench — $(nproc) cores, $(uname -r), $(date -u +%F)"
echo "method: median of $RUNS runs, wall time and peak RSS from GNU time, after sync; MB/s = 10^6 B of plaintext/s"
echo

GIB=$((1 << 30))
head -c 1048576 /dev/urandom > "$work/block"
for _ in $(seq 1024); do cat "$work/block"; done > "$work/big.bin"
cat "$work/big.bin" > /dev/null
"$vault" init --kdf interactive 2>/dev/null
printf '%-44s %10s %14s %12s\n' "1 GiB document" "time" "throughput" "peak RSS"

AFTER_EACH='rm -rf "$VAULT_DIR"/objects/*.vlt "$VAULT_DIR"/index.db' \
    r=$(median_of "$vault" add --allow-duplicate "$work/big.bin"); row "vault add (SHA-256, encrypt, fsync)" $GIB "$r"
r=$(median_of dd if="$work/big.bin" of="$work/dd.bin" bs=1M conv=fsync); row "dd conv=fsync (durable-write floor of this disk)" $GIB "$r"; rm -f "$work/dd.bin"
if [ -d /dev/shm ] && [ "$(df -k --output=avail /dev/shm | tail -1)" -gt $((3 << 20)) ]; then
    # The same add with the vault in memory: what the CPU pipeline alone achieves.
    shm=$(mktemp -d /dev/shm/vault-bench-XXXXXX)
    VAULT_DIR="$shm/v" "$vault" init --kdf interactive 2>/dev/null
    AFTER_EACH='rm -rf "$shm"/v/objects/*.vlt "$shm"/v/index.db' \
        r=$(VAULT_DIR="$shm/v" median_of "$vault" add --allow-duplicate "$work/big.bin"); row "vault add, vault on tmpfs (CPU-bound)" $GIB "$r"
    rm -rf "$shm"
fi
id=$("$vault" add --allow-duplicate "$work/big.bin")
AFTER_EACH='rm -f "$work/out.bin"' r=$(median_of "$vault" get "$id" -o "$work/out.bin"); row "vault get -o FILE (decrypt, verify, fsync)" $GIB "$r"
"$vault" get "$id" -o "$work/out.bin"; cmp "$work/out.bin" "$work/big.bin"; rm -f "$work/out.bin"

if command -v age >/dev/null 2>&1; then
    age-keygen -o "$work/key.txt" 2>/dev/null
    recipient=$(grep -o 'age1[0-9a-z]*' "$work/key.txt")
    AFTER_EACH='rm -f "$work/big.age"' r=$(median_of age -r "$recipient" -o "$work/big.age" "$work/big.bin"); row "age -r (encrypt to file, no fsync)" $GIB "$r"
    AFTER_EACH='rm -f "$work/big.age"' r=$(median_of sh -c "age -r $recipient -o '$work/big.age' '$work/big.bin' && sync '$work/big.age'"); row "age -r, then sync the file" $GIB "$r"
    age -r "$recipient" -o "$work/big.age" "$work/big.bin"
    AFTER_EACH='rm -f "$work/out.bin"' r=$(median_of age -d -i "$work/key.txt" -o "$work/out.bin" "$work/big.age"); row "age -d (decrypt to file, no fsync)" $GIB "$r"
else
    echo "(age is not installed: no age figures; 'apt-get install age' to compare)"
fi

# --- head to head with age: add, export to a folder and to a pipe, many small files ---------------
RUNS="${AGE_RUNS:-5}" "$(dirname "$0")/bench-age.sh" "$vault"

# --- many small documents: one command, 2,000 files of 4 KiB ------------------------------------
echo
printf '%-44s %10s %14s %12s\n' "2,000 files of 4 KiB" "time" "files/s" "peak RSS"
small="$work/small"; mkdir -p "$small"
for i in $(seq 2000); do head -c 4096 /dev/urandom > "$small/f$i.bin"; done
frow() { awk -v n="$1" -v s="${2% *}" -v k="${2#* }" 'BEGIN { printf "%-44s %8.2f s %10.0f /s %8.1f MiB\n", n, s, 2000 / s, k / 1024 }'; }
AFTER_EACH='rm -rf "$VAULT_DIR"/objects/*.vlt "$VAULT_DIR"/index.db' \
    r=$(median_of "$vault" add -r --allow-duplicate "$small"); frow "vault add -r (durable when it exits)" "$r"
if command -v age >/dev/null 2>&1; then
    AFTER_EACH='rm -f "$small"/*.age' r=$(median_of sh -c "for f in '$small'/*.bin; do age -r $recipient -o \"\$f.age\" \"\$f\"; done")
    frow "age -r, once per file (no fsync)" "$r"
fi
rm -rf "$small"

# --- bulk adds stay linear: add -r of 1,000 and of 8,000 files of 2 KiB, a fresh vault each ------
echo
printf '%-44s %10s %14s %12s\n' "add -r of 2 KiB files, a fresh vault each" "time" "files/s" "peak RSS"
rate1000=""
for n in 1000 8000; do
    bulk="$work/bulk$n"; mkdir -p "$bulk"
    for i in $(seq "$n"); do head -c 2048 /dev/urandom > "$bulk/f$i.bin"; done
    fresh="$work/fresh$n"
    VAULT_DIR="$fresh" "$vault" init --kdf interactive 2>/dev/null
    r=$(VAULT_DIR="$fresh" AFTER_EACH="rm -rf '$fresh' && VAULT_DIR='$fresh' '$vault' init --kdf interactive 2>/dev/null" \
        median_of "$vault" add -r "$bulk")
    awk -v n="$n" -v s="${r% *}" -v k="${r#* }" -v base="$rate1000" 'BEGIN {
        rate = n / s
        printf "%-44s %8.2f s %10.0f /s %8.1f MiB", "vault add -r, " n " files", s, rate, k / 1024
        if (base != "") printf "   (%.2fx the per-file rate of 1,000; issue 39 asks at least 0.7x)", rate / base
        printf "\n" }'
    [ "$n" = 1000 ] && rate1000=$(awk -v s="${r% *}" 'BEGIN { print 1000 / s }')
    rm -rf "$bulk" "$fresh"
done

# --- import: an RNCryptor v3 file of the same 1 GiB, made by the PyPI rncryptor package ----------
peer="$(dirname "$0")/../.build-peers/venv/bin/python"
if [ -x "$peer" ]; then
    echo
    printf '%-44s %10s %14s %12s\n' "import, 1 GiB RNCryptor v3 file" "time" "throughput" "peak RSS"
    OUT="$work/big.rncryptor" IN="$work/big.bin" IMPORT_PW="bench import" "$peer" -c 'import os, rncryptor; open(os.environ["OUT"], "wb").write(rncryptor.RNCryptor().encrypt(open(os.environ["IN"], "rb").read(), os.environ["IMPORT_PW"]))'
    AFTER_EACH='rm -rf "$VAULT_DIR"/objects/*.vlt "$VAULT_DIR"/index.db' \
        r=$(VAULT_IMPORT_PASSWORD="bench import" median_of "$vault" import --rncryptor "$work/big.rncryptor" --allow-duplicate --progress none)
    row "vault import --rncryptor (HMAC, AES-CBC, seal, fsync)" $GIB "$r"
    AFTER_EACH='rm -rf "$VAULT_DIR"/objects/*.vlt "$VAULT_DIR"/index.db' \
        r=$(median_of "$vault" add --allow-duplicate "$work/big.bin"); row "vault add of the same plaintext" $GIB "$r"
    AFTER_EACH='rm -f "$work/out.bin"' r=$(OUT="$work/out.bin" IN="$work/big.rncryptor" IMPORT_PW="bench import" median_of "$peer" -c \
        'import os, rncryptor
class Binary(rncryptor.RNCryptor):   # the package decodes plaintext as UTF-8; documents are bytes
    def post_decrypt_data(self, data): return data[:-data[-1]]
open(os.environ["OUT"], "wb").write(Binary().decrypt(open(os.environ["IN"], "rb").read(), os.environ["IMPORT_PW"]))')
    row "python rncryptor.decrypt (PyPI, to a file)" $GIB "$r"
    rm -f "$work/big.rncryptor"
else
    echo "(the rncryptor peer is not installed: no import figures; 'make peers')"
fi

# The upload peer: the test receiver in sink mode (it hashes each body; no JSON parsing).
receiver_pid=
trap '[ -n "$receiver_pid" ] && kill "$receiver_pid" 2>/dev/null; rm -rf "$work"' EXIT
python3 "$(dirname "$0")/receiver.py" --port-file "$work/port" --mode sink --quiet 2>/dev/null &
receiver_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.05; done
upload_url="http://127.0.0.1:$(cat "$work/port")/batches"

# --- the export's base64 encoder alone (issue: >= 1 GB/s, not sodium_bin2base64) ---------------
echo
root="$(cd "$(dirname "$0")/.." && pwd)"
if ${CC:-cc} -O2 -o "$work/base64_bench" "$root/scripts/base64_bench.c" "$root/Sources/CBase64/vault_base64.c" \
        -I "$root/Sources/CBase64/include" -lsodium 2>/dev/null; then
    "$work/base64_bench"
else
    echo "(no C compiler with libsodium headers: base64 figures skipped)"
fi

# --- export: 20 documents, decrypt + base64 + canonical JSON to a file ---------------------------
echo
printf '%-44s %10s %14s %12s\n' "export, 20 documents" "time" "throughput" "peak RSS"
for mib in 10 50; do
    docs="$work/docs$mib"; mkdir -p "$docs"
    export VAULT_DIR="$work/vault$mib"
    "$vault" init --kdf interactive 2>/dev/null
    for i in $(seq -w 1 20); do head -c $((mib << 20)) /dev/urandom > "$docs/doc$i.bin"; done
    "$vault" add "$docs"/doc*.bin > /dev/null
    bytes=$((20 * (mib << 20)))
    AFTER_EACH='rm -rf "$work/out"' r=$(median_of "$vault" export --out "$work/out" --progress none)
    row "vault export 20 x $mib MiB (objects)" $bytes "$r"
    export_s=${r% *}
    AFTER_EACH='rm -rf "$work/out"' r=$(median_of "$vault" export --out "$work/out" --progress none --shape strings)
    row "vault export 20 x $mib MiB (strings)" $bytes "$r"
    r=$(median_of "$vault" upload --url "$upload_url" --new-run --progress none --no-credentials)
    row "vault upload 20 x $mib MiB (local receiver)" $bytes "$r"
    if command -v age >/dev/null 2>&1; then
        for f in "$docs"/doc*.bin; do age -r "$recipient" -o "$f.age" "$f"; done
        # The shell pipeline it replaces: age -d | base64 -w0 into {"Files":["…",…]}.
        cat > "$work/pipeline.sh" <<PIPE
set -e
{ printf '{"Files":['; sep=
  for f in "$docs"/doc*.bin.age; do printf '%s"' "\$sep"; age -d -i "$work/key.txt" "\$f" | base64 -w0; printf '"'; sep=,; done
  printf ']}'; } > "$work/pipeline.json"
PIPE
        AFTER_EACH='rm -f "$work/pipeline.json"' r=$(median_of sh "$work/pipeline.sh")
        row "age -d | base64 -w0 pipeline, 20 x $mib MiB" $bytes "$r"
        # The issue's target: 3x the pipeline, whose anchor in research/perf-anchors.md is 214 MB/s.
        # The target is set on 20 x 50 MiB; for 20 x 10 MiB the ratios are printed alone.
        awk -v b="$bytes" -v e="$export_s" -v p="${r% *}" -v mib="$mib" 'BEGIN {
            v = b / e / 1e6
            printf "  -> vault export is %.1fx the pipeline in this run, %.1fx its 214 MB/s anchor", p / e, v / 214
            if (mib == 50) printf " (target on 20 x 50 MiB: 3x = 642 MB/s, %s)", (v >= 642 ? "met" : "not met")
            printf "\n" }'
    fi
    rm -rf "$docs" "$VAULT_DIR"
done
# --- passwd: 1,000 documents of 1 MiB; headers only ---------------------------------------------
echo
printf '%-44s %10s %14s %12s\n' "passwd, 1,000 documents of 1 MiB" "time" "written" "peak RSS"
export VAULT_DIR="$work/vault-passwd"
"$vault" init --kdf interactive 2>/dev/null
pw="$work/pw"; mkdir -p "$pw"
for i in $(seq 1000); do head -c 1048576 /dev/urandom > "$pw/d$i.bin"; done
"$vault" add -r "$pw" >/dev/null
rm -rf "$pw"
vault_bytes=$(du -sb "$VAULT_DIR" | cut -f1)
r=$(VAULT_NEW_PASSWORD="bench password" median_of "$vault" passwd)
written=$(VAULT_NEW_PASSWORD="bench password" "$vault" passwd 2>&1 | sed -n 's/.*re-sealed, \(.*\) written.*/\1/p')
awk -v s="${r% *}" -v k="${r#* }" -v w="$written" -v v="$vault_bytes" 'BEGIN {
    printf "%-44s %8.2f s %14s %8.1f MiB\n", "vault passwd (journal, 1,000 headers, fsyncs)", s, w, k / 1024
    printf "  -> the vault holds %.0f MiB; passwd rewrites headers only (payloads untouched)\n", v / 1048576 }'
"$vault" audit --deep >/dev/null && echo "  -> vault audit --deep after it: clean"
rm -rf "$VAULT_DIR"

echo
echo "export figures are whole commands: process start, Argon2id (interactive), planning, decrypting,"
echo "authenticating, base64, writing the payload and its SHA-256 for the manifest (no fsync)."
echo "upload figures stream the same payloads over HTTP to scripts/receiver.py on 127.0.0.1 (sink mode:"
echo "it reads and hashes each body); the receiver shares the two cores with vault."

# --- capture-only stations: add beside an ordinary vault's add -----------------------------------
RUNS="$RUNS" "$(dirname "$0")/bench-capture.sh" "$vault"

# --- upload protocols: form to PHP, tus to resumable-upload, each beside curl ------------------
RUNS="$RUNS" "$(dirname "$0")/bench-protocols.sh" "$vault"

# --- the back office: one vault receive's intake, 20 stations at once, beside PHP's php -S ------
RUNS="$RUNS" "$(dirname "$0")/bench-intake.sh" "$vault"

# --- the operator's pages of an office of 100,000 documents ---------------------------------------
RUNS="$RUNS" "$(dirname "$0")/bench-office.sh" "$vault"

# --- scale: each command at 1,000 and 10,000 documents (BENCH_SCALE=1: and 100,000) -------------
"$(dirname "$0")/bench-scale.sh" "$vault"

# --- the installed binary: size and start-up, static beside dynamic and age ---------------------
"$(dirname "$0")/static-build.sh" .build-static >/dev/null 2>&1 && "$(dirname "$0")/bench-install.sh" "$vault" .build-static/release/vault \
    || echo "(the static build failed: no install figures)"
