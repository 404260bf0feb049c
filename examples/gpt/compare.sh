#!/bin/sh
# Pre-Norm vs SiameseNorm on the embedded addition task: the same model, seed, data and step
# budget, only --norm differs. Prints both runs' progress, then their final held-out loss and
# exact-match accuracy side by side.
#
# usage: examples/gpt/compare.sh [BUILD_DIR] [extra sn-gpt-train flags, given to both runs]
#   e.g. examples/gpt/compare.sh build --steps 300
# The two runs go in parallel when the machine has 2 or more cores (SN_JOBS=1: one at a time).
set -u
build=${1:-build}
[ $# -gt 0 ] && shift
exe=$build/examples/gpt/sn-gpt-train
if [ ! -x "$exe" ]; then
    echo "compare.sh: $exe not found; build first:" >&2
    echo "  meson setup $build && meson compile -C $build" >&2
    exit 1
fi
jobs=${SN_JOBS:-$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 1)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# The trainer's defaults are the main-job config (4 layers, width 64, 1..3-digit addition,
# 2000 steps of 64 problems); both runs get exactly the same flags apart from --norm.
run() { # placement, extra flags...
    name=$1
    shift
    "$exe" --norm "$name" --seed 1 --eval-every 250 --print-every 0 --samples 0 --json "$@" \
        2>&1 >"$tmp/$name.json" |
        while IFS= read -r line; do printf '[%s] %s\n' "$name" "$line"; done
}

start=$(date +%s)
if [ "$jobs" -ge 2 ]; then
    run pre "$@" &
    run siamese "$@" &
    wait
else
    run pre "$@"
    run siamese "$@"
fi
end=$(date +%s)

field() { # placement, key: from the run's final JSON line
    grep '"final":true' "$tmp/$1.json" | sed -e "s/.*\"$2\":\([^,}]*\).*/\1/"
}
status=0
for n in pre siamese; do
    if ! grep -q '"final":true' "$tmp/$n.json"; then
        echo "compare.sh: the $n run did not finish" >&2
        status=1
    fi
done
[ $status -eq 0 ] || exit $status

echo
echo "Pre-Norm vs SiameseNorm, same seed and budget ($((end - start)) s wall):"
awk -v pl="$(field pre val_loss)" -v sl="$(field siamese val_loss)" \
    -v pa="$(field pre accuracy)" -v sa="$(field siamese accuracy)" \
    -v pd="$(field pre diverged)" -v sd="$(field siamese diverged)" \
    -v pt="$(field pre elapsed_s)" -v st="$(field siamese elapsed_s)" 'BEGIN {
    printf "  %-30s %12s %12s\n", "", "pre", "siamese"
    printf "  %-30s %12.4f %12.4f\n", "held-out loss (answer bytes)", pl, sl
    printf "  %-30s %11.1f%% %11.1f%%\n", "held-out exact-match accuracy", 100 * pa, 100 * sa
    printf "  %-30s %12s %12s\n", "diverged", pd, sd
    printf "  %-30s %11.1fs %11.1fs\n", "run time", pt, st
}'
