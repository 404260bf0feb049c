#!/bin/sh
# Test: sn-gpt-compare end to end on a tiny budget (2 arms x 2 seeds of a 1-layer model):
# it finishes, prints the per-arm table, the paired interval and a verdict naming the budget
# as its last line, and writes its CSVs; then over two budgets (--budgets), each its own
# schedule; the p-values and Holm's correction over the verdicts printed (a stand-in trainer
# with known differences). $1 = sn-gpt-compare, $2 = a scratch directory.
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
check "summary.csv" grep -q "^,,12,siamese,2,0," "$out/summary.csv"
check "the verdict names the budget" \
    sh -c "tail -n 1 '$out.txt' | grep -q '^verdict: after 12 steps (3072 tokens): siamese'"

# the plot script (written with or without gnuplot): names such as pre_norm are printed as they
# are, not as gnuplot's enhanced text (pre with a subscript n), in every plot
check "the plot script" [ -s "$out/plot/curves.gp" ]
check "every plot's text literal (noenhanced terminals)" \
    sh -c "grep '^set terminal' '$out/plot/curves.gp' | grep -q . && ! grep '^set terminal' '$out/plot/curves.gp' | grep -qv noenhanced"

# the budget axis: each budget its own schedule, warmup and cosine to its own end; a verdict
# per budget naming it; the statistics along the run; the difference against the budget
rm -rf "$out"
"$exe" --seeds 2 --jobs 2 --budgets 8,16 --out "$out" -- --layers 1 --width 32 \
    --heads 2 --batch 4 --val-size 8 --lr 2e-3 --warmup 2 > "$out.txt" 2>&1
rc=$?
cat "$out.txt"
check "budgets: exits 0" [ $rc -eq 0 ]
for b in 8 16; do
    log=$out/logs/n${b}_siamese_s1.csv
    check "budget $b: the run has $b steps" [ "$(tail -n 1 "$log" | cut -d, -f1)" -eq $b ]
    check "budget $b: peak LR right after its warmup" [ "$(sed -n 3p "$log" | cut -d, -f5)" = 0.002 ]
    check "budget $b: the cosine ends at its own end (min LR 2e-4)" \
        [ "$(tail -n 1 "$log" | cut -d, -f5)" = 0.0002 ]
done
check "budgets: a verdict per budget, the longest last" sh -c "tail -n 2 '$out.txt' | head -n 1 |
    grep -q '^verdict: after 8 steps (2048 tokens): ' && tail -n 1 '$out.txt' |
    grep -q '^verdict: after 16 steps (4096 tokens): '"
check "budgets: the difference along the run" \
    grep -q "siamese - pre_norm along the run: at 25% .* mean over the run" "$out.txt"
check "budgets: what the two statistics say together" grep -q "^  reading: siamese: " "$out.txt"
check "budgets: Holm over both budgets' verdicts, the family said once" sh -c "[ \"\$(grep -c \
    '^multiple comparisons: Holm over the 2 comparisons printed as verdicts (the final held-out loss of each arm against pre_norm, in each of 2 cells)' \
    '$out.txt')\" -eq 1 ]"
check "budgets: each verdict with its p and Holm p" \
    sh -c "[ \"\$(grep -c '^verdict: after .* paired seeds, p [<=] [0-9.]*, Holm p [<=] [0-9.]*)\$' '$out.txt')\" -eq 2 ]"
check "paired.csv: 5 statistics x 2 budgets" [ "$(grep -c ',siamese,pre_norm,' "$out/paired.csv")" -eq 10 ]
check "paired.csv: the mean over the run" grep -q "^,,16,4096,siamese,pre_norm,mean," "$out/paired.csv"
check "plot/budget.dat: a row per budget" [ "$(grep -c '^[0-9]' "$out/plot/budget.dat")" -eq 2 ]
check "the budget plot, its text literal" sh -c "grep -q '^set output .budget.png' '$out/plot/curves.gp' &&
    ! grep '^set terminal' '$out/plot/curves.gp' | grep -qv noenhanced"
"$exe" --budgets 8,0 > /dev/null 2>&1
check "a budget of 0 steps is a usage error" [ $? -eq 1 ]

# the main job's cell (known by its runs' config hashes): after the verdict, what its documented
# 4x-budget run gave and whether that agrees; a stand-in trainer prints the runs' lines
fake="$(dirname "$0")/fake_train.sh"
for want in lower higher; do
    FAKE_SIAMESE=$want "$exe" --trainer "$fake" --no-plot --out "$out" > "$out.txt" 2>&1
    cat "$out.txt"
    case $want in lower) note="the same verdict" ;; higher) note="the 4x-budget run disagreed" ;; esac
    check "main job's cell, siamese $want: the 4x line says '$note'" sh -c "tail -n 2 '$out.txt' |
        head -n 1 | grep -q '^verdict: after 300 steps' && tail -n 1 '$out.txt' |
        grep -q '^at 4x this budget (documented in docs/reproduction.md, not rerun here): after 1200 steps .*: $note'"
done
check "main job's cell: one comparison, so no correction, said once" \
    sh -c "[ \"\$(grep -c '^multiple comparisons: one comparison printed as a verdict, so no correction' '$out.txt')\" -eq 1 ]"
check "main job's cell: the verdict's p, no Holm p" sh -c "tail -n 2 '$out.txt' | head -n 1 |
    grep -q ', 6 paired seeds, p < 0.0001)\$' && ! grep -q 'Holm p' '$out.txt'"
# a family of three comparisons (arms of the stand-in trainer, seeds 1..6): siamese far lower
# (holds after Holm), weak lower with p 0.0267, whose interval excludes 0 but whose Holm p
# (2 x 0.0267 = 0.0534) does not: a lead; flat, no difference (p 0.828, Holm max(0.0534, 0.828))
"$exe" --trainer "$fake" --no-plot --arms pre_norm,siamese,weak,flat --out "$out" > "$out.txt" 2>&1
rc=$?
cat "$out.txt"
check "family of 3: exit 0 ($rc), the family said once" sh -c "[ $rc -eq 0 ] && [ \"\$(grep -c \
    '^multiple comparisons: Holm over the 3 comparisons printed as verdicts (the final held-out loss of each arm against pre_norm); p two-sided, paired t' \
    '$out.txt')\" -eq 1 ]"
check "family of 3: siamese holds after Holm" grep -q \
    "^  verdict: after 300 steps (153600 tokens): siamese: held-out loss lower than pre_norm by 0.0500 (95% CI 0.0500..0.0500, 6 paired seeds, p < 0.0001, Holm p < 0.0001)\$" \
    "$out.txt"
check "family of 3: weak is a lead, not a finding" grep -q \
    "^  verdict: after 300 steps (153600 tokens): weak: held-out loss lower than pre_norm by 0.0030, but only uncorrected (Holm over 3 comparisons): a lead, not a finding (95% CI 0.0005..0.0055, 6 paired seeds, p = 0.0267, Holm p = 0.0534)\$" \
    "$out.txt"
check "family of 3: flat, no difference" grep -q \
    "^  verdict: after 300 steps (153600 tokens): flat vs pre_norm: no difference detectable at this budget (difference +0.0003, 95% CI -0.0034..+0.0041, 6 paired seeds, p = 0.828, Holm p = 0.828)\$" \
    "$out.txt"
check "family of 3: summary.csv's p and p_holm" sh -c "head -n 1 '$out/summary.csv' | grep -q ',verdict,p,p_holm\$' &&
    grep -q '^,,300,weak,6,0,.*,6,lower,0.0266926,0.0533852\$' '$out/summary.csv'"
check "family of 3: paired.csv's p (uncorrected)" \
    grep -q '^,,300,153600,flat,pre_norm,final,.*,6,none,0.827635$' "$out/paired.csv"
# an arm whose every run diverges: no p, in the family as p = 1 (Holm over 2, not 1)
"$exe" --trainer "$fake" --no-plot --arms pre_norm,siamese,diverges --out "$out" > "$out.txt" 2>&1
rc=$?
check "a comparison without a p: exit 0 ($rc), in the family as p = 1" sh -c "[ $rc -eq 0 ] &&
    grep -q '^multiple comparisons: Holm over the 2 comparisons printed as verdicts (.*; those with fewer than 2 pairs count as p = 1)' '$out.txt' &&
    grep -q 'siamese: held-out loss lower than pre_norm by 0.0500 (.*, p < 0.0001, Holm p < 0.0001)\$' '$out.txt' &&
    grep -q '^,,300,diverges,6,6,.*,0,too-few,nan,1\$' '$out/summary.csv'"
# ... only for the documented comparison, seeds 1..6: on other seeds the note does not apply
# (it used to be printed whatever the seeds)
for seeds in "--seeds 2 --first-seed 50" "--seeds 6 --first-seed 2" "--seeds 5"; do
    # shellcheck disable=SC2086 # the flags, word by word
    "$exe" --trainer "$fake" --no-plot $seeds --out "$out" > "$out.txt" 2>&1
    rc=$?
    check "main job's cell with $seeds: exit 0 ($rc), a verdict last, no 4x line" \
        sh -c "[ $rc -eq 0 ] && tail -n 1 '$out.txt' | grep -q '^verdict: after 300 steps' &&
            ! grep -q '4x' '$out.txt'"
done

"$exe" --arms pre_norm > /dev/null 2>&1
check "one arm is a usage error" [ $? -eq 1 ]
rm -rf "$out" "$out.txt"
exit $fail
