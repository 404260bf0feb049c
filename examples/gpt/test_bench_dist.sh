#!/bin/sh
# Test: sn-gpt-bench-dist's arguments are range-checked (one process, no launcher: one rank).
# $1 = sn-gpt-bench-dist, $2 = a scratch path prefix.
#  - a float count or a rep count that is not a whole number in range is a usage error
#    (exit 2, a message), before any allocation: 2^62 floats used to wrap the buffer's size
#    and overflow the heap, a negative rep count asked malloc for ~2^64 bytes, "10x" was 10;
#  - small valid arguments run and print both timings.
set -u
exe=$1
tmp=$2
# shellcheck source=SCRIPTDIR/testlib.sh # (sets fail, check)
. "$(dirname "$0")/testlib.sh"

# shellcheck disable=SC2317 # called through check
usage_error() { # ARGS...: exit 2 with a message naming the range
    "$exe" "$@" > "$tmp.out" 2>&1
    rc=$?
    [ "$rc" -eq 2 ] && grep -q "expected\|usage" "$tmp.out"
}
for bad in "4611686018427387904 1" "18446744073709551616 1" "2147483648 1" "1000 -5" "1000 0" \
    "10x 2" "0 2" "-1 2" "1000 1000001" "1000 2x" "1000 2 3"; do
    # shellcheck disable=SC2086 # the arguments, word by word
    check "refused (exit 2): $bad" usage_error $bad
done
check "refused (exit 2): an empty float count" usage_error "" 2
"$exe" 1000 3 > "$tmp.out" 2>&1
check "1000 floats, 3 reps: runs" [ $? -eq 0 ]
check "... and prints both timings" sh -c "grep -q '^ordered' '$tmp.out' && grep -q '^MPI_Allreduce' '$tmp.out'"
rm -f "$tmp".*
exit "$fail"
