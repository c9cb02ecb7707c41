#!/usr/bin/env bash
# The fuzz families (Fuzz/README.md), in three modes:
#
#   make fuzz         (scripts/fuzz.sh)        builds the libFuzzer driver with AddressSanitizer in
#                     .build-fuzz/ and, for every family (or those in FAMILIES), makes its seed
#                     corpus, replays Fuzz/regressions/<family>/ and fuzzes for FUZZ_SECONDS (120).
#                     The Makefile runs the smoke run below first, with the same build.
#   make fuzz-smoke   (FUZZ_SMOKE=1)           the sanitized driver: the regressions, then a fixed
#                     number of inputs per family from a fixed seed (about 5 s each), so that the
#                     same inputs run every time and a pass or a failure repeats.
#   make fuzz-replay  (FUZZ_REPLAY=1)          what `make test` runs: the fuzzvault of the normal
#                     debug build (.build/debug, no sanitizer, no libFuzzer) replays every
#                     family's regressions and its whole seed corpus through the same properties.
#                     No second build of the dependency graph.
#
# A crash leaves its input in Fuzz/crashes/ and fails the run; fix it, then move the input to
# Fuzz/regressions/<family>/ so it is replayed every time. A family that finds no input to
# replay fails: a replay of nothing proves nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${FUZZ_SECONDS:-120}"
all="envelope history state config rncryptor s3 upload payload multipart receipt tus age"
families="${FAMILIES:-$all}"
for family in $families; do
    case " $all " in *" $family "*) ;; *) echo "vault: no fuzz family '$family' (the families: $all)" >&2; exit 64 ;; esac
done

if [ -n "${FUZZ_REPLAY:-}" ]; then
    bin=.build/debug/fuzzvault
    [ -x "$bin" ] || { echo "vault: $bin is missing (make build makes it)" >&2; exit 1; }
    work=.build/fuzz-replay
    printf '%-10s %11s %7s\n' family regressions seeds
    for family in $families; do
        corpus=$work/$family
        rm -rf "$corpus" && mkdir -p "$corpus"
        [ -d "Fuzz/seeds/$family" ] && cp Fuzz/seeds/"$family"/* "$corpus"/
        python3 scripts/fuzz-seeds.py "$family" "$corpus" > /dev/null
        "$bin" "$family" --make-seeds "$corpus" > /dev/null
        regressions=$( (ls Fuzz/regressions/"$family" 2>/dev/null || true) | grep -vc '^README.md$' || true)
        inputs=("$corpus")
        [ "$regressions" -gt 0 ] && inputs=(Fuzz/regressions/"$family" "${inputs[@]}")
        log=$work/$family.log
        "$bin" "$family" "${inputs[@]}" > "$log" 2>&1 || {
            tail -20 "$log"; echo "vault: replaying the inputs of '$family' failed ($log)" >&2; exit 1; }
        printf '%-10s %11s %7s\n' "$family" "$regressions" "$(ls "$corpus" | wc -l)"
    done
    exit 0
fi

bin=.build-fuzz/debug/fuzzvault
# FUZZ_BUILT=1: the target is already built (runs of several families side by side).
[ -n "${FUZZ_BUILT:-}" ] || swift build -c debug --product fuzzvault --scratch-path .build-fuzz \
    -Xswiftc -sanitize=fuzzer,address -Xswiftc -DFUZZING 2>&1 | grep -E 'error|warning: ' | grep -v 'ld.gold\|swift-distributed-tracing' || true
[ -x "$bin" ] || { echo "vault: the fuzz target did not build" >&2; exit 1; }
export SWIFT_BACKTRACE=enable=no   # Swift's backtracer confuses ASan (research/swift-probe.md)
export ASAN_OPTIONS=detect_leaks=0
# LeakSanitizer is off: the Swift runtime's caches and the families' lazily made keys and
# scratch vaults live until exit and read as leaks. Memory is bounded by -rss_limit_mb and
# -malloc_limit_mb (one allocation over the limit is a crash) instead.
opts=(-detect_leaks=0 -rss_limit_mb=2048 -malloc_limit_mb=64)
mkdir -p Fuzz/crashes
if [ -n "${FUZZ_SMOKE:-}" ]; then budget_text="a fixed number of inputs from seed 1"; else budget_text="${seconds} s"; fi
echo "method: libFuzzer + AddressSanitizer, one process per family, ${budget_text} each, ${opts[*]}, -max_len from the corpus"
printf '%-10s %8s %11s %7s %7s %8s %9s\n' family seeds executions cov ft corpus peak_rss
failed=0
for family in $families; do
    corpus=.build-fuzz/corpus/$family
    rm -rf "$corpus" && mkdir -p "$corpus"
    # Seeds: committed samples (Fuzz/seeds/), fixtures and official vectors, and what vault writes.
    [ -d "Fuzz/seeds/$family" ] && cp Fuzz/seeds/"$family"/* "$corpus"/
    python3 scripts/fuzz-seeds.py "$family" "$corpus" > /dev/null
    "$bin" "$family" --make-seeds "$corpus" > /dev/null
    seeds=$(ls "$corpus" | wc -l)
    [ "$seeds" -gt 0 ] || { echo "vault: no seeds for '$family'" >&2; failed=1; continue; }
    if [ -d "Fuzz/regressions/$family" ] && ls Fuzz/regressions/"$family"/* > /dev/null 2>&1; then
        "$bin" "$family" "${opts[@]}" Fuzz/regressions/"$family"/* > ".build-fuzz/$family.regressions.log" 2>&1 || {
            tail -30 ".build-fuzz/$family.regressions.log"; echo "vault: a regression input of '$family' fails again" >&2; failed=1; continue; }
    fi
    log=.build-fuzz/$family.log
    set +e
    if [ -n "${FUZZ_SMOKE:-}" ]; then
        case $family in
            envelope) runs=10000 ;; config) runs=5000 ;; rncryptor) runs=2500 ;; s3) runs=3000 ;;
            upload) runs=200 ;; *) runs=500 ;;
        esac
        budget=(-seed=1 -runs="$runs")
    else
        budget=(-max_total_time="$seconds")
    fi
    "$bin" "$family" "$corpus" "${opts[@]}" "${budget[@]}" -artifact_prefix="Fuzz/crashes/$family-" -print_final_stats=1 > "$log" 2>&1
    rc=$?
    set -e
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    rss=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
    last=$(grep -E '#[0-9]+.*cov: ' "$log" | tail -1)
    cov=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || echo '?')
    ft=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || echo '?')
    corp=$(echo "$last" | grep -o 'corp: [0-9]*/[0-9]*[a-zA-Z]*' | cut -d' ' -f2 || echo '?')
    printf '%-10s %8s %11s %7s %7s %8s %6s MB\n' "$family" "$seeds" "$execs" "$cov" "$ft" "$corp" "$rss"
    if [ $rc -ne 0 ]; then
        grep -E 'property violated|ERROR|SUMMARY|Test unit written' "$log" | head -5
        echo "vault: the fuzzer found a crash in '$family' ($log; the input is in Fuzz/crashes/)" >&2
        failed=1
    fi
done
exit $failed
