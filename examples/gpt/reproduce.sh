#!/bin/sh
# Reruns every experiment of docs/reproduction.md with sn-gpt-compare, each into its own
# directory under OUT (default repro-out): summary.csv, paired.csv, runs.csv, curves.csv and
# the plots.
#
# usage: examples/gpt/reproduce.sh [BUILD_DIR [OUT [EXPERIMENT...]]]
#   EXPERIMENT, on the fortunes corpus (the default): main budgets budget16 lr lr-fine ablations
#   depth hc hc4x
#   on the generated tales corpus (the history section): tales-main tales-isa tales-first
#   tales-init tales-ablations tales-lr tales-depth addition, and tales-span (SpanNorm at the
#   tales LR sweep's and main job's settings: 28 runs, measured 1h47m under a load of about 30)
#   not in the default list: lr-heldout (each arm's best LRs of lr-fine on new seeds: 36 runs,
#   25 minutes under a load of 8, 0.6.19, Zen 3 VM) and other-data (the main job at two LRs on
#   two other texts; needs the Debian packages jargon-text and bible-kjv: 24 runs a text, 9.7
#   and 5.7 minutes under that load)
#   default: the fortunes experiments. Each one says its own ETA; on an idle 2-core machine
#   main takes about 1.5 minutes, budgets 5, budget16 about 9, lr 6.5, lr-fine about 8 (11
#   under a load of 2, 0.6.19, Zen 3 VM), ablations 1.5, depth 2,
#   hc (Pre-Norm, SiameseNorm, Hyper-Connections n = 4 dynamic) about 2 (3 under a load of 3),
#   hc4x about 4 (6 under that load) (0.6.4, Zen 4 VM).
# The tales experiments ran before the fortunes corpus existed: they pin the corpus and the
# model they ran with (16 layers, batch 16, 300 steps, unless they say otherwise).
set -eu
build=${1:-build}
out=${2:-repro-out}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
which=${*:-main budgets budget16 lr lr-fine ablations depth hc hc4x}
cmp=$build/examples/gpt/sn-gpt-compare
if [ ! -x "$cmp" ]; then
    echo "reproduce.sh: $cmp not found; build first: meson setup $build && meson compile -C $build" >&2
    exit 1
fi
mkdir -p "$out"

run() { # name, sn-gpt-compare arguments...
    name=$1
    shift
    echo "=== $name: sn-gpt-compare $*"
    "$cmp" --out "$out/$name" "$@" | tee "$out/$name.txt"
}

tales="--task tales --layers 16 --batch 16 --steps 300"
# The other corpora: the texts as the packages ship them (the Bible without its verse labels),
# checked against the digests the documented runs used.
other_data() {
    if [ ! -r /usr/share/doc/jargon-text/jargon.txt.gz ] || ! command -v bible >/dev/null 2>&1; then
        echo "reproduce.sh other-data: needs the Debian packages jargon-text and bible-kjv" \
            "(apt-get install jargon-text bible-kjv)" >&2
        return 1
    fi
    mkdir -p "$out/corpora"
    gzip -dc /usr/share/doc/jargon-text/jargon.txt.gz >"$out/corpora/jargon.txt"
    bible -f "Gen1:1-Rev22:21" | sed 's/^[^ ]* //' >"$out/corpora/kjv.txt"
    for f in "jargon 40dfb4b98191a670a09a183d5798d50f243d23fdbd1495dcc0aca2ce5895ba97" \
        "kjv b5c4940bcfeee072c0935b5200d0f9d88a00a0199cb0961d16133458fcdfae5d"; do
        got=$(sha256sum "$out/corpora/${f% *}.txt" | cut -d ' ' -f 1)
        [ "$got" = "${f#* }" ] ||
            echo "reproduce.sh other-data: ${f% *}.txt differs from the documented runs' text" >&2
        run "data-${f% *}" --lrs 5e-3,1e-2 -- --data "$out/corpora/${f% *}.txt"
    done
}

for e in $which; do
    case $e in
    main) # the README's main job: Pre-Norm vs SiameseNorm, 6 seeds, the trainer's defaults
        run main ;;
    budgets) # the main job's cell at 1x and 4x its budget, 6 seeds each: the verdict rule
        run budgets --budgets 300,1200 ;;
    budget16) # the same cell at 16x the budget, 4 seeds
        run budget16 --seeds 4 --budgets 4800 ;;
    lr) # the learning-rate sweep on the main job's cell, SpanNorm included, 4 seeds per cell
        run lr --seeds 4 --arms pre_norm,post_norm,hybridnorm,siamese,span_norm --lrs 3e-3,1e-2,3e-2 ;;
    lr-fine) # Pre-Norm and SiameseNorm on a finer LR grid around both arms' best, 6 seeds a cell
        run lr-fine --arms pre_norm,siamese --lrs 3e-3,4e-3,5e-3,7e-3,1e-2,1.4e-2 ;;
    lr-heldout) # each arm's best LRs of lr-fine (chosen on seeds 1..6) on seeds 7..12
        run lr-heldout --arms pre_norm,siamese --lrs 4e-3,5e-3,7e-3 --first-seed 7 ;;
    other-data) # the main job at LR 5e-3 and 1e-2 on two other English texts from Debian
        # packages (jargon-text: the Jargon File 4.4.7; bible-kjv: the King James Bible), 6 seeds
        other_data ;;
    ablations) # the paper's two ablations on the main job's cell: c = 1, and no input norm
        run ablations --seeds 4 \
            --arm 'siamese=--norm siamese' --arm 'siamese-c1=--norm siamese --scales none' \
            --arm 'siamese-no-input-norm=--norm siamese --no-input-norm' ;;
    depth) # the depth sweep around the main job's 4 layers (its row is the main job): 2 and 8
        run depth --seeds 4 --depths 2,8 ;;
    hc) # Hyper-Connections (n = 4, dynamic: the trainer's default) beside the main job's arms
        run hc --arms pre_norm,siamese,hyper_connections ;;
    hc4x) # Hyper-Connections against SiameseNorm at 4x the main job's budget, 6 seeds
        run hc4x --arms siamese,hyper_connections --budgets 1200 ;;
    tales-main) # the main job of 0.2.0 to 0.4.2: tales, 16 layers, 300 steps of 16 x 64
        # shellcheck disable=SC2086 # the flags, word by word
        run tales-main -- $tales ;;
    tales-isa) # the same on every other kernel path this CPU has: the verdict must not change
        for isa in scalar avx2 avx512; do
            # shellcheck disable=SC2086
            SN_ISA=$isa run "tales-main-$isa" -- $tales
        done ;;
    tales-first) # the first main-job settings: 8 layers, 600 steps, LR 3e-3
        run tales-first -- --task tales --batch 16 --layers 8 --steps 600 --lr 3e-3 ;;
    tales-init) # which weight init the trainer uses by default (at the first main-job settings)
        run tales-init --seeds 4 \
            --arm 'pre-gpt2=--norm pre_norm --init gpt2' --arm 'pre-flat=--norm pre_norm --init flat' \
            --arm 'pre-mitchell=--norm pre_norm --init mitchell' \
            --arm 'siamese-gpt2=--norm siamese --init gpt2' \
            --arm 'siamese-flat=--norm siamese --init flat' \
            --arm 'siamese-mitchell=--norm siamese --init mitchell' \
            -- --task tales --batch 16 --layers 8 --steps 600 --lr 3e-3 ;;
    tales-ablations) # the paper's two ablations: c = 1, and no input norm
        # shellcheck disable=SC2086
        run tales-ablations \
            --arm 'siamese=--norm siamese' --arm 'siamese-c1=--norm siamese --scales none' \
            --arm 'siamese-no-input-norm=--norm siamese --no-input-norm' -- $tales ;;
    tales-lr) # the learning-rate sweep (8 layers, 300 steps, 4 seeds per cell)
        run tales-lr --seeds 4 --arms pre_norm,post_norm,siamese,hybridnorm \
            --lrs 1e-3,3e-3,1e-2,3e-2 -- --task tales --batch 16 --layers 8 --steps 300 ;;
    tales-depth) # the depth sweep (300 steps, LR 3e-3, 4 seeds per cell)
        run tales-depth --seeds 4 --depths 4,12,24 -- --task tales --batch 16 --steps 300 \
            --lr 3e-3 ;;
    addition) # the arithmetic task (8 layers, 1000 steps of 64 problems, LR 3e-3)
        run addition -- --task addition --layers 8 --batch 64 --steps 1000 --lr 3e-3 ;;
    tales-span) # SpanNorm in the tales LR sweep's settings and at its main job's (4 seeds)
        run span-lr --seeds 4 --arms pre_norm,span_norm --lrs 1e-2,3e-2 -- --task tales \
            --batch 16 --layers 8 --steps 300
        # shellcheck disable=SC2086
        run span-main --seeds 4 --arms pre_norm,span_norm,siamese -- $tales ;;
    *)
        echo "reproduce.sh: unknown experiment $e" >&2
        exit 1 ;;
    esac
done
