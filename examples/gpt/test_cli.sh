#!/bin/sh
# Test: the sn-gpt-train command line. $1 = the executable, $2 = a scratch path prefix.
set -u
exe=$1
tmp=$2
. "$(dirname "$0")/testlib.sh"
tiny="--task addition --layers 1 --width 32 --heads 2 --digits 2 --batch 8 --val-size 50 --samples 2"

"$exe" --help > "$tmp.help" 2>&1
check "--help exits 0" [ $? -eq 0 ]
check "--help lists the placements" \
    grep -q "pre_norm|post_norm|siamese|.*hybridnorm|hybridnorm_star|span_norm" "$tmp.help"

"$exe" $tiny --steps 20 --eval-every 10 --json --log "$tmp.csv" --save "$tmp.ckpt" \
    > "$tmp.json" 2> "$tmp.err"
check "training run exits 0" [ $? -eq 0 ]
check "a start line, 3 eval lines and a final JSON line" [ "$(grep -c '^{' "$tmp.json")" -eq 5 ]
check "start line: version, kernel path, seed, config hash" \
    grep -q '^{"start":true,"norm":"siamese","seed":1,"version":"[0-9.]*","isa":"[a-z0-9]*","config_hash":"[0-9a-f]\{16\}"' "$tmp.json"
check "final JSON line" grep -q '"final":true.*"diverged":false' "$tmp.json"
check "CSV: header + 20 steps" [ "$(wc -l < "$tmp.csv")" -eq 21 ]
check "progress shows tok/s and ETA" grep -q "tok/s | eta" "$tmp.err"

"$exe" $tiny --steps 30 --eval-every 10 --load "$tmp.ckpt" > "$tmp.out" 2>&1
check "resume exits 0" [ $? -eq 0 ]
check "resume starts at step 20" grep -q "resumed from .* at step 20" "$tmp.out"
check "resume ends at step 30" grep -q "final | norm siamese | step 30" "$tmp.out"

# the checkpoint's model is used; a model flag given with --load must match it (0.6.19 silently
# trained the checkpoint's model whatever was given)
nomodel="--task addition --digits 2 --batch 8 --val-size 50 --samples 2"
"$exe" $nomodel --steps 25 --load "$tmp.ckpt" > "$tmp.out" 2>&1
check "--load without model flags uses the checkpoint's model (1 layer, width 32)" \
    grep -q "norm siamese .*L1 D32 H2" "$tmp.out"
for flag in "--norm pre_norm" "--layers 2" "--width 64" "--heads 4" "--untied" "--eps 1e-6" \
    "--norm-kind rmsnorm" "--init gpt2" "--scales none" "--no-input-norm" "--qk-norm qk" \
    "--ctx 16"; do
    # shellcheck disable=SC2086 # the flags, word by word
    "$exe" $tiny $flag --steps 25 --load "$tmp.ckpt" > "$tmp.out" 2>&1
    rc=$?
    check "--load with $flag, which the checkpoint does not have: refused (exit $rc)" \
        sh -c "[ $rc -eq 1 ] && grep -q 'differs from the checkpoint' '$tmp.out'"
done
"$exe" $tiny --norm siamese --eps 1e-5 --steps 25 --load "$tmp.ckpt" > "$tmp.out" 2>&1
check "--load with model flags equal to the checkpoint's: runs" [ $? -eq 0 ]
hc="$tiny --norm hyper_connections"
"$exe" $hc --hc-rate 2 --hc-mode static --steps 4 --save "$tmp.hc.ckpt" > "$tmp.out" 2>&1
check "a Hyper-Connections checkpoint (rate 2, static) is written" [ -s "$tmp.hc.ckpt" ]
for flag in "--hc-rate 4" "--hc-mode dynamic"; do
    # shellcheck disable=SC2086 # the flags, word by word
    "$exe" $hc $flag --steps 6 --load "$tmp.hc.ckpt" > "$tmp.out" 2>&1
    rc=$?
    check "--load of that checkpoint with $flag: refused (exit $rc)" \
        sh -c "[ $rc -eq 1 ] && grep -q -- '${flag% *} differs from the checkpoint' '$tmp.out'"
done
"$exe" $hc --hc-rate 2 --hc-mode static --steps 6 --load "$tmp.hc.ckpt" > "$tmp.out" 2>&1
check "--load of that checkpoint with its own --hc-rate and --hc-mode: runs" [ $? -eq 0 ]

"$exe" $tiny --steps 10 --load "$tmp.ckpt" > "$tmp.out" 2>&1
check "--load past --steps is an error" [ $? -eq 1 ]

# lr 1e3 with weight decay 1 multiplies the weights by -999 per step: inf within ~15 steps
"$exe" $tiny --norm post_norm --lr 1000 --wd 1 --warmup 0 --steps 60 --json > "$tmp.json" 2>&1
rc=$?
check "divergence exits with status 3 (got $rc)" [ $rc -eq 3 ]
check "divergence reported" grep -q '"diverged":true' "$tmp.json"

for n in siamese_hybrid_pre hybridnorm hybridnorm_star; do
    "$exe" $tiny --norm $n --steps 3 --eval-every 0 > "$tmp.out" 2>&1
    check "--norm $n runs with q/k/v norms by default" grep -q "norm $n, qkv-norm |" "$tmp.out"
    check "--norm $n finishes" grep -q "final | norm $n | step 3" "$tmp.out"
done
"$exe" $tiny --norm span_norm --steps 3 --eval-every 0 > "$tmp.out" 2>&1
check "--norm span_norm finishes" grep -q "final | norm span_norm | step 3" "$tmp.out"
check "--help states span_norm's own parameters" grep -q "span_norm: one norm per sub-layer" \
    "$tmp.help"
"$exe" $tiny --norm pre_norm --qk-norm qk --steps 3 > "$tmp.out" 2>&1
check "--qk-norm qk on Pre-Norm" grep -q "norm pre_norm, qk-norm |" "$tmp.out"
"$exe" $tiny --norm hybridnorm --qk-norm none --steps 3 > "$tmp.out" 2>&1
check "--qk-norm none on HybridNorm" grep -q "norm hybridnorm |" "$tmp.out"
"$exe" --qk-norm q > "$tmp.out" 2>&1
check "unknown --qk-norm is a usage error" [ $? -eq 1 ]

"$exe" --init sideways > "$tmp.out" 2>&1
check "unknown --init is a usage error" [ $? -eq 1 ]
"$exe" --task sideways > "$tmp.out" 2>&1
check "unknown --task is a usage error" [ $? -eq 1 ]

# the banner names the kernel path (SN_ISA is honoured) and a hash of the config, which is the
# same for two seeds and differs for another init
SN_ISA=scalar "$exe" $tiny --steps 2 --seed 1 > "$tmp.out" 2>&1
check "SN_ISA=scalar: the banner says kernels scalar" grep -q "kernels scalar |" "$tmp.out"
h1=$(sed -n 's/.*config \([0-9a-f]*\) .*/\1/p' "$tmp.out")
"$exe" $tiny --steps 2 --seed 2 > "$tmp.out" 2>&1
h2=$(sed -n 's/.*config \([0-9a-f]*\) .*/\1/p' "$tmp.out")
"$exe" $tiny --steps 2 --seed 1 --init gpt2 > "$tmp.out" 2>&1
h3=$(sed -n 's/.*config \([0-9a-f]*\) .*/\1/p' "$tmp.out")
check "config hash: same for another seed ($h1 $h2), not for another init ($h3)" \
    sh -c "[ -n '$h1' ] && [ '$h1' = '$h2' ] && [ '$h1' != '$h3' ]"

# the default task: the fortunes corpus, language modelling (test gpt-corpus checks it); the
# generated tales corpus on request
"$exe" --layers 1 --width 32 --heads 2 --batch 4 --steps 5 --val-size 8 > "$tmp.out" 2>&1
check "default task is fortunes" grep -q "| fortunes (Debian fortunes " "$tmp.out"
"$exe" --task tales --layers 1 --width 32 --heads 2 --batch 4 --steps 5 --val-size 8 \
    > "$tmp.out" 2>&1
check "--task tales" grep -q "| tales |" "$tmp.out"
check "tales run finishes" grep -q "final | norm siamese | step 5 | val loss" "$tmp.out"
"$exe" --layers 1 --width 32 --heads 2 --batch 4 --steps 3 --norm siamese --scales none \
    --no-input-norm --eps 1e-6 > "$tmp.out" 2>&1
check "the paper's ablations as flags" grep -q "final | norm siamese | step 3" "$tmp.out"

"$exe" --norm sideways > "$tmp.out" 2>&1
check "unknown placement is a usage error" [ $? -eq 1 ]
"$exe" --steps > "$tmp.out" 2>&1
check "missing value is a usage error" [ $? -eq 1 ]

i=0
: > "$tmp.txt"
while [ $i -lt 200 ]; do
    echo "the quick brown fox jumps over the lazy dog $i" >> "$tmp.txt"
    i=$((i + 1))
done
"$exe" --data "$tmp.txt" --layers 1 --width 32 --heads 2 --ctx 16 --batch 4 --steps 10 \
    --eval-every 5 > "$tmp.out" 2>&1
check "text file training exits 0" [ $? -eq 0 ]
check "text file run reports a val loss" \
    grep -q "final | norm siamese | step 10 | val loss" "$tmp.out"

# bf16 streams (--act-dtype bf16): trains, the same weights (digest) on a second run and with
# 2 threads, close to the fp32 run (one bf16 rounding per stage); a bad value is a usage error
for run in a:1 b:1 c:2; do
    SN_THREADS=${run#*:} "$exe" $tiny --norm siamese --act-dtype bf16 --steps 40 --eval-every 20 \
        --json > "$tmp.bf${run%:*}" 2>&1
done
digest() { grep '"final":true' "$1" | sed 's/.*"digest":"//;s/".*//'; }
val() { grep '"final":true' "$1" | sed 's/.*"val_loss"://;s/,.*//'; }
check "--act-dtype bf16 runs" grep -q '"final":true.*"diverged":false' "$tmp.bfa"
da=$(digest "$tmp.bfa") db=$(digest "$tmp.bfb") dc=$(digest "$tmp.bfc")
check "--act-dtype bf16: the same weights again ($da $db) and with 2 threads ($dc)" \
    sh -c "[ -n '$da' ] && [ '$da' = '$db' ] && [ '$da' = '$dc' ]"
"$exe" $tiny --norm siamese --steps 40 --eval-every 20 --json > "$tmp.f32" 2>&1
bf=$(val "$tmp.bfa") f32=$(val "$tmp.f32")
first=$(grep '"val_loss"' "$tmp.bfa" | head -1 | sed 's/.*"val_loss"://;s/,.*//')
check "--act-dtype bf16: the loss falls ($first -> $bf) and ends within 0.05 of fp32's ($f32)" \
    awk -v a="$bf" -v b="$f32" -v s="$first" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a < s && d < 0.05) }'
"$exe" --act-dtype fp16 > "$tmp.out" 2>&1
check "unknown --act-dtype is a usage error" [ $? -eq 1 ]

# --data FILE with --task NAME: refused in either order (the later one used to win, the other
# ignored without a word)
printf 'some text to train on, long enough for a few windows of context.\n%.0s' 1 2 3 4 5 6 7 8 \
    > "$tmp.txt"
for pair in "--data $tmp.txt --task tales" "--task fortunes --data $tmp.txt" \
    "--data $tmp.txt --task addition"; do
    # shellcheck disable=SC2086 # the flags, word by word
    "$exe" --layers 1 --width 32 --heads 2 --steps 1 --samples 0 --val-size 8 $pair \
        > "$tmp.out" 2>&1
    rc=$?
    check "$pair: refused ($rc) with a message" \
        sh -c "[ $rc -eq 1 ] && grep -q 'give one of them' '$tmp.out' && ! grep -q '^step' '$tmp.out'"
done

rm -f "$tmp.help" "$tmp.csv" "$tmp.bfa" "$tmp.bfb" "$tmp.bfc" "$tmp.f32" "$tmp.ckpt" "$tmp.hc.ckpt" "$tmp.json" "$tmp.err" "$tmp.out" "$tmp.txt"
exit $fail
