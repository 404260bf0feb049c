#!/bin/sh
# Test: data-parallel sn-gpt-train under MPI. $1 = mpirun, $2 = sn-gpt-train, $3 = a scratch
# path prefix.
#  - 2 ranks: every rank holds the same weights after every step (the trainer compares the
#    ranks' digests after each step and exits 4 if they differ), and two runs end with the
#    same digest (the ordered reduction is bitwise reproducible);
#  - 3 ranks (uneven shares of the batch and of the gradient chunks): the same two checks;
#  - 2 and 3 ranks with global batch B agree with one process with batch B: every step's train
#    loss within 1e-5 relative, the final val loss within 1e-5 relative, on the default text and on
#    the addition task (loss on the answers only: the ranks see different target counts, so this
#    checks that each rank scales its gradient by the global count).
set -u
mpirun=$1
exe=$2
tmp=$3
. "$(dirname "$0")/testlib.sh"

# OpenMPI in CI: root needs the two ALLOW variables; containers often lack CMA (the vader
# single-copy mechanism) and a network, and may have fewer cores than ranks.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl=self,vader OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_hwloc_base_binding_policy=none
export SN_THREADS=1
# Under AddressSanitizer LeakSanitizer reports OpenMPI's own allocations, made in MCA
# components it has unloaded by exit (no stack to suppress by library): leak checking stays on
# for every trainer run without MPI, off for these. Whether or not ASAN_OPTIONS is set already
# (tools/test.sh sets it; a plain `meson test` in a sanitizer build does not, and LeakSanitizer
# is on by default), and harmless without ASan.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

tales="--layers 2 --width 32 --heads 2 --batch 8 --steps 20 --val-size 32 --eval-every 10 --json"
add="--task addition --digits 2 --layers 2 --width 32 --heads 2 --batch 6 --steps 20
     --val-size 100 --eval-every 10 --samples 0 --json"

field() { # the value of "key" in the final JSON line of a file
    grep '"final":true' "$1" | sed -e "s/.*\"$2\":\"*\([^,\"}]*\).*/\1/"
}
close() { # x y relative-tolerance
    awk -v x="$1" -v y="$2" -v tol="$3" 'BEGIN { d = x - y; if (d < 0) d = -d;
        s = x < 0 ? -x : x; exit !(x == x + 0 && y == y + 0 && d <= tol * s) }'
}
curves_close() { # two CSV logs, relative tolerance: every step's train loss
    [ "$(wc -l < "$1")" -eq "$(wc -l < "$2")" ] && paste -d, "$1" "$2" | awk -F, -v tol="$3" '
        NR > 1 { d = $2 - $10; if (d < 0) d = -d; r = d / $2; if (r > worst) worst = r }
        END { printf "    worst relative train-loss difference %.2g\n", worst; exit !(worst <= tol) }'
}

for np in 2 3; do
    "$mpirun" -np $np "$exe" $tales --log "$tmp.np$np.csv" > "$tmp.np$np.json" 2> "$tmp.np$np.err"
    rc=$?
    check "tales, $np ranks: exits 0 (got $rc)" [ $rc -eq 0 ]
    [ $rc -eq 0 ] || cat "$tmp.np$np.err"
    check "tales, $np ranks: identical weights on every rank after every step" \
        grep -q "data parallel | $np ranks .* weights identical on every rank after each of 20 steps" \
        "$tmp.np$np.err"
    check "tales, $np ranks: only rank 0 writes (one final JSON line)" \
        [ "$(grep -c '"final":true' "$tmp.np$np.json")" -eq 1 ]
    "$mpirun" -np $np "$exe" $tales > "$tmp.again.json" 2> /dev/null
    check "tales, $np ranks: bitwise reproducible (final digest $(field "$tmp.np$np.json" digest))" \
        [ "$(field "$tmp.np$np.json" digest)" = "$(field "$tmp.again.json" digest)" ]
done

"$exe" $tales --log "$tmp.np1.csv" > "$tmp.np1.json" 2> /dev/null
check "tales, 1 process: exits 0" [ $? -eq 0 ]
for np in 2 3; do
    check "tales: $np ranks' train-loss curve = 1 process's to 1e-5" \
        curves_close "$tmp.np1.csv" "$tmp.np$np.csv" 1e-5
    a=$(field "$tmp.np1.json" val_loss) b=$(field "$tmp.np$np.json" val_loss)
    check "tales: $np ranks' final val loss = 1 process's to 1e-5 ($a, $b)" close "$a" "$b" 1e-5
done

"$exe" $add --log "$tmp.a1.csv" > "$tmp.a1.json" 2> /dev/null
check "addition, 1 process: exits 0" [ $? -eq 0 ]
for np in 2 3; do
    "$mpirun" -np $np "$exe" $add --log "$tmp.a$np.csv" > "$tmp.a$np.json" 2> "$tmp.a$np.err"
    check "addition, $np ranks: exits 0" [ $? -eq 0 ]
    check "addition: $np ranks' train-loss curve = 1 process's to 1e-5" \
        curves_close "$tmp.a1.csv" "$tmp.a$np.csv" 1e-5
    a=$(field "$tmp.a1.json" val_loss) b=$(field "$tmp.a$np.json" val_loss)
    check "addition: $np ranks' final val loss = 1 process's to 1e-5 ($a, $b)" close "$a" "$b" 1e-5
done

"$mpirun" -np 2 "$exe" $tales --reduce allreduce > "$tmp.ar.json" 2> "$tmp.ar.err"
check "--reduce allreduce runs (identical weights on both ranks)" \
    grep -q "MPI_Allreduce, .* weights identical on every rank" "$tmp.ar.err"

"$mpirun" -np 3 "$exe" $tales --batch 2 > "$tmp.out" 2>&1
check "a batch smaller than the rank count is an error" [ $? -ne 0 ]
grep -q "fewer rows than the 3 ranks" "$tmp.out" || cat "$tmp.out"

rm -f "$tmp".*
exit $fail
