#!/bin/sh
# Test 'bench-args' (meson test, suite bench): the bench tools refuse a malformed argument with
# their usage and exit status 2, rather than running no case or part of them (a typo in --dtype
# used to run nothing; --isa foo ran auto), and so does tools/auto-tiers.sh (before its first
# run). Usage: test_args.sh SN_BENCH SN_AUTO_CALLS AUTO_TIERS_SH BUILD_ROOT
set -u
bench=$1
calls=$2
tiers=$3
root=$4
fail=0
expect() { # expect STATUS TOOL ARGS...
    want=$1
    shift
    "$@" >/dev/null 2>&1
    got=$?
    if [ "$got" -ne "$want" ]; then
        echo "bench-args: FAIL: '$*' exited $got, not $want"
        fail=1
    fi
}
for a in "--dtype fp32" "--dtype f32," "--dtype ,bf16" "--isa foo" "--reps 0" "--reps 102" \
    "--reps 3x" "--threads 0" "--threads 1,,2" "--threads 257" "--sizes 8x64," "--sizes 8x" \
    "--sizes -8x64" "--sizes 8x64junk" "--sample-ms nan" "--sample-ms 0" "--reps" "--bogus"; do
    # shellcheck disable=SC2086 # the arguments, word by word
    expect 2 "$bench" $a
done
for a in "--dtype fp32" "--dtype f32,bf16," "--sizes 8x64," "--sizes 8x64x" "--sizes 1x99999999" \
    "--rounds 4" "--offset 3" "--param-offset 2" "--sizes"; do
    # shellcheck disable=SC2086
    expect 2 "$calls" $a
done
for a in "0" "21" "2x" "1 nosuchop"; do
    # shellcheck disable=SC2086
    expect 2 sh "$tiers" "$root" $a
done
expect 2 sh "$tiers" "$root/no-such-build" 1
# well-formed lists still run
expect 0 "$bench" --quick --sizes 4x32,3x17 --threads 1 --dtype bf16,f32 --isa auto --ops "rmsnorm fwd"
expect 0 "$calls" --sizes 2x17 --rounds 5 --dtype bf16,f32 --ops "split fwd"
[ "$fail" -eq 0 ] && echo "bench-args: every malformed argument refused, the well-formed ones ran"
exit "$fail"
