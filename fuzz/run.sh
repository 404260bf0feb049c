#!/bin/sh
# Runs one libFuzzer harness for SN_FUZZ_SECONDS seconds (default 60) starting from its seed
# corpus. New interesting inputs are written to a scratch directory, never into the committed
# corpus (add them by hand with `-merge=1` when they are worth keeping). A crash leaves its
# input as WORK_DIR/crash-* and fails the test (exit status 1: libFuzzer's default, 77, is what
# meson reads as 'skipped'). Prints the number of executions.
# Usage: run.sh HARNESS SEED_CORPUS_DIR WORK_DIR
set -eu
exe=$1 seeds=$2 work=$3
secs=${SN_FUZZ_SECONDS:-60}
mkdir -p "$work/corpus"
log=$work/fuzz.log
status=0
"$exe" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 -error_exitcode=1 \
    -artifact_prefix="$work/" "$work/corpus" "$seeds" >"$log" 2>&1 || status=$?
tail -n 30 "$log"
execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
echo "$(basename "$exe"): ${execs:-?} executions in ${secs} s, exit status $status"
exit "$status"
