#!/bin/sh
# Test: sn-gpt-compare end to end on a tiny budget (2 arms x 2 seeds of a 1-layer model):
# it finishes, prints the per-arm table, the paired interval and a verdict as its last line,
# and writes its CSVs. $1 = sn-gpt-compare, $2 = a scratch directory.
set -u
exe=$1
out=$2
. "$(dirname "$0")/testlib.sh"
rm -rf "$out"
"$exe" --seeds 2 --jobs 2 --out "$out" -- --layers 1 --width 32 --heads 2 \
    --steps 12 --batch 4 --val-size 8 > "$out.txt" 2>&1
rc=$?
cat "$out.txt"
check "exits 0" [ $rc -eq 0 ]
check "a row per arm" grep -q "^  siamese .* +- " "$out.txt"
check "the paired interval" grep -q "siamese - pre_norm, seed by seed: .*95% t interval" "$out.txt"
check "the verdict is the last line" sh -c "tail -n 1 '$out.txt' | grep -q '^verdict: '"
check "progress with an ETA" grep -q "runs done, .* | eta " "$out.txt"
check "runs.csv: header + 4 runs" [ "$(wc -l < "$out/runs.csv")" -eq 5 ]
check "runs.csv names the kernel path" grep -q ",avx512,\|,avx2,\|,scalar," "$out/runs.csv"
check "curves.csv has the evaluations" [ "$(wc -l < "$out/curves.csv")" -gt 8 ]
check "summary.csv" grep -q "^,,siamese,2,0," "$out/summary.csv"
# the plot script (written with or without gnuplot): names such as pre_norm are printed as they
# are, not as gnuplot's enhanced text (pre with a subscript n), in every plot
check "the plot script" [ -s "$out/plot/curves.gp" ]
check "every plot's text literal (noenhanced terminals)" \
    sh -c "grep '^set terminal' '$out/plot/curves.gp' | grep -q . && ! grep '^set terminal' '$out/plot/curves.gp' | grep -qv noenhanced"
"$exe" --arms pre_norm > /dev/null 2>&1
check "one arm is a usage error" [ $? -eq 1 ]
rm -rf "$out" "$out.txt"
exit $fail
