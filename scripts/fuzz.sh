#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer target (Fuzz/) with ASan and runs it for FUZZ_SECONDS
# (default 120) from a seed corpus made of the fixture vectors' envelopes plus any regression
# inputs in Fuzz/regressions/. A crash leaves its input in Fuzz/crashes/ and fails the run;
# fix it, then move the input to Fuzz/regressions/ so it is replayed every time.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-120}"
swift build -c debug --product fuzzvault --scratch-path .build-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING 2>&1 | grep -vE 'ld.gold: warning|^\[' || true
bin=.build-fuzz/debug/fuzzvault
[ -x "$bin" ] || { echo "vault: the fuzz target did not build" >&2; exit 1; }
corpus=.build-fuzz/corpus
mkdir -p "$corpus" Fuzz/crashes
python3 - "$corpus" <<'PY'
import glob, os, sys
n = 0
for path in glob.glob("Fixtures/envelope/*.vector"):
    data = open(path, "rb").read()
    head, sep, body = data.partition(b"\n\n")
    open(os.path.join(sys.argv[1], os.path.basename(path)), "wb").write(body)
    n += 1
if n == 0:
    sys.exit("vault: no fixture vectors found for the seed corpus")
print(f"seed corpus: {n} envelopes from Fixtures/envelope")
PY
export SWIFT_BACKTRACE=enable=no   # Swift's backtracer confuses ASan (research/swift-probe.md)
if ls Fuzz/regressions/* >/dev/null 2>&1; then
    "$bin" Fuzz/regressions/* -runs=0 >/dev/null 2>&1 || { echo "vault: a regression input crashes again" >&2; exit 1; }
    echo "regressions: $(ls Fuzz/regressions | wc -l) inputs replayed, none crashes"
fi
"$bin" "$corpus" -max_total_time="$seconds" -artifact_prefix=Fuzz/crashes/ -print_final_stats=1 2>&1 \
    | grep -E 'stat::number_of_executed_units|stat::peak_rss|cov:|ERROR|crash-|DONE' | tail -6
if ls Fuzz/crashes/crash-* >/dev/null 2>&1; then echo "vault: the fuzzer found a crash (Fuzz/crashes/)" >&2; exit 1; fi
