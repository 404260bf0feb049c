#!/bin/sh
# Is SN_ISA_AUTO the fastest path for every kernel slot on this machine, across processes?
#
#   tools/bench-auto.sh [BUILD_DIR [RUNS [checkasm options...]]]   (defaults: build, 10)
#
# Runs `checkasm --bench-only` RUNS times, each a process of its own (a process's placement and
# the host's state at the time move some slots' ratios by 10% and more, both ways, on the VMs of
# docs/performance.md), and reads the runs together. Per case (slot, row type, width) it prints
# how many runs found auto slower than a forced path beyond that run's noise floor, and, for
# each path auto may run, its worst ratio to the fastest forced path of a run: the path with the
# smallest worst ratio is the safe choice for a static table (src/kernels/registry.c). A case
# is "consistent" when every run found auto slower beyond the noise; the last line counts them.
# Nothing here is part of the pass/fail suite: timings are not tests.
set -eu
build=${1:-build}
runs=${2:-10}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
ca="$build/tests/checkasm"
[ -x "$ca" ] || {
    echo "bench-auto: $ca not found (build first: meson setup $build && meson compile -C $build)" >&2
    exit 2
}
case $runs in
'' | *[!0-9]*)
    echo "bench-auto: RUNS must be a number, not '$runs'" >&2
    exit 2
    ;;
esac
if [ "$runs" -lt 2 ] || [ "$runs" -gt 100 ]; then
    echo "bench-auto: RUNS must be 2 .. 100" >&2
    exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
start=$(date +%s)
i=1
while [ "$i" -le "$runs" ]; do
    "$ca" --bench-only "$@" >"$tmp/run.$i" 2>&1 || {
        echo "bench-auto: checkasm failed in run $i:" >&2
        tail -5 "$tmp/run.$i" >&2
        exit 1
    }
    now=$(date +%s)
    el=$((now - start))
    printf 'bench-auto: run %d of %d done, %ds elapsed, eta %ds\n' "$i" "$runs" "$el" \
        $((el * (runs - i) / i)) >&2
    i=$((i + 1))
done
# a case line: "  SLOT TYPE n=N  PATH MEDIAN PATH MEDIAN ... auto=PATH auto/PATH RATIO [lo, hi]"
# a flag line: "  auto slower beyond the noise: SLOT TYPE D=N: RATIO [lo, hi]"
awk -v runs="$runs" '
FNR == 1 { run++ }
$1 ~ /^[a-z_0-9]+$/ && $3 ~ /^n=/ {
    key = $1 " " $2 " " substr($3, 3)
    if (!(key in seen)) { seen[key] = 1; order[++ncase] = key }
    best = 0
    np = 0
    for (f = 4; f + 1 <= NF && $f !~ /^auto=/; f += 2) { np++; name[np] = $f; t[np] = $(f + 1) + 0 }
    for (p = 1; p <= np; p++) if (best == 0 || t[p] < best) best = t[p]
    for (p = 1; p <= np; p++) {
        r = t[p] / best
        pk = key SUBSEP name[p]
        if (!(pk in worst) || r > worst[pk]) worst[pk] = r
        paths[key] = (p == 1 ? "" : paths[key] " ") name[p]
    }
    next
}
/auto slower beyond the noise:/ {
    split($0, a, ": ")
    split(a[2], b, " ")
    key = b[1] " " b[2] " " substr(b[3], 3)
    sub(/:$/, "", key)
    flagged[key]++
}
END {
    cons = 0
    for (c = 1; c <= ncase; c++) {
        key = order[c]
        if (!(key in flagged)) continue
        n = split(paths[key], pn, " ")
        line = sprintf("  %-26s flagged in %2d of %d runs; worst ratio to the fastest:", key, flagged[key], runs)
        for (p = 1; p <= n; p++) line = line sprintf(" %s %.3f", pn[p], worst[key SUBSEP pn[p]])
        print line
        if (flagged[key] == runs) cons++
    }
    printf "bench-auto: %d runs; auto slower beyond the noise in every run (consistent) in %d cases\n", runs, cons
}' "$tmp"/run.*
