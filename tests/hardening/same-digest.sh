#!/bin/sh
# Test 'determinism-runs': two separate runs of `test_determinism --digest`, in different
# environments (glibc's malloc perturbation and arena settings change where the buffers land;
# SN_THREADS changes the default thread count of contexts), must print the same digest of
# every output and gradient, per kernel path.
# Usage: same-digest.sh TEST_DETERMINISM_EXE
set -eu
exe=$1
a=$(env MALLOC_PERTURB_=0 SN_THREADS=1 "$exe" --digest)
b=$(env MALLOC_PERTURB_=165 MALLOC_TOP_PAD_=1048576 SN_THREADS=2 "$exe" --digest)
echo "run 1:"; echo "$a"
echo "run 2:"; echo "$b"
[ -n "$a" ] || { echo "same-digest: no digest printed" >&2; exit 1; }
[ "$a" = "$b" ] || { echo "same-digest: FAIL: the two runs differ" >&2; exit 1; }
echo "same-digest: OK"
