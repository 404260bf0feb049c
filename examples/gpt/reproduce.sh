#!/bin/sh
# Reruns every experiment of docs/reproduction.md with sn-gpt-compare, each into its own
# directory under OUT (default repro-out): summary.csv, runs.csv, curves.csv and the plots.
#
# usage: examples/gpt/reproduce.sh [BUILD_DIR [OUT [EXPERIMENT...]]]
#   EXPERIMENT: main isa first init ablations lr depth addition (default: all of them), and
#   span (SpanNorm, not in the default set: 28 runs, measured 1h47m under a load of about 30)
# About 75 minutes on a 2-core machine for all of them; each one says its own ETA. Experiments
# run before the main job's defaults settled pin the settings they ran with.
set -eu
build=${1:-build}
out=${2:-repro-out}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
which=${*:-main isa first init ablations lr depth addition}
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

for e in $which; do
    case $e in
    main) # the README's main job: Pre-Norm vs SiameseNorm, 6 seeds, the trainer's defaults
        run main ;;
    isa) # the same on every other kernel path this CPU has: the verdict must not change
        for isa in scalar avx2 avx512; do
            SN_ISA=$isa run "main-$isa"
        done ;;
    first) # the first main-job settings: 8 layers, 600 steps, LR 3e-3
        run first -- --layers 8 --steps 600 --lr 3e-3 ;;
    init) # which weight init the trainer uses by default (at the first main-job settings)
        run init --seeds 4 \
            --arm 'pre-gpt2=--norm pre_norm --init gpt2' --arm 'pre-flat=--norm pre_norm --init flat' \
            --arm 'pre-mitchell=--norm pre_norm --init mitchell' \
            --arm 'siamese-gpt2=--norm siamese --init gpt2' \
            --arm 'siamese-flat=--norm siamese --init flat' \
            --arm 'siamese-mitchell=--norm siamese --init mitchell' \
            -- --layers 8 --steps 600 --lr 3e-3 ;;
    ablations) # the paper's two ablations: c = 1, and no input norm
        run ablations \
            --arm 'siamese=--norm siamese' --arm 'siamese-c1=--norm siamese --scales none' \
            --arm 'siamese-no-input-norm=--norm siamese --no-input-norm' ;;
    lr) # the learning-rate sweep (8 layers, 300 steps, 4 seeds per cell)
        run lr --seeds 4 --arms pre_norm,post_norm,siamese,hybridnorm --lrs 1e-3,3e-3,1e-2,3e-2 \
            -- --layers 8 --steps 300 ;;
    depth) # the depth sweep (300 steps, LR 3e-3, 4 seeds per cell)
        run depth --seeds 4 --depths 4,12,24 -- --steps 300 --lr 3e-3 ;;
    addition) # the arithmetic task (8 layers, 1000 steps of 64 problems, LR 3e-3)
        run addition -- --task addition --layers 8 --batch 64 --steps 1000 --lr 3e-3 ;;
    span) # SpanNorm in the LR sweep's settings and at the main job's (4 seeds)
        run span-lr --seeds 4 --arms pre_norm,span_norm --lrs 1e-2,3e-2 -- --layers 8 --steps 300
        run span-main --seeds 4 --arms pre_norm,span_norm,siamese ;;
    *)
        echo "reproduce.sh: unknown experiment $e" >&2
        exit 1 ;;
    esac
done
