#!/bin/sh
# Is SN_ISA_AUTO within noise of the fastest forced path for every public call, in every layout
# a trainer may give, across processes? The call-level counterpart of tools/bench-auto.sh.
#
#   tools/auto-calls.sh [BUILD_DIR [RUNS]]   (defaults: build, 2; about 10 minutes a run on a
#                                             2-core VM)
#
# Runs `sn-auto-calls` (bench/auto_calls.c) on 32 sizes (2048 rows of 8 .. 120 columns, one or
# two of every width class below 128 (kernels.h), and 128 .. 8192 columns at about 64K to 400K
# elements), fp32 and bf16, in four layouts: matrices on 4
# KiB boundaries, staggered by multiples of 64 bytes, 16 bytes past a boundary (`--offset 16`,
# where glibc's malloc puts large blocks), and every buffer, parameters too, 16 bytes past one.
# Each layout runs RUNS times, each a process of its own: a process's placement and the host's
# state move some cells by 10% and more, and one process can flag a cell that no other does. It
# then reads the runs together and prints, per layout, each case that more than one run found
# `auto` slower than a forced path beyond that run's A/A floor, with each path's worst ratio to
# the fastest path of a run (the path with the smallest worst ratio is the safe static choice,
# src/kernels/registry.c), and the count of flagged cases per run. Nothing here is part of the
# pass/fail suite: timings are not tests.
set -eu
# shellcheck source=SCRIPTDIR/auto-lib.sh # (sets ac, runs, tmp)
. "$(dirname "$0")/auto-lib.sh"
auto_setup auto-calls "[BUILD_DIR [RUNS]]" "${1:-build}" "${2:-2}" 8 # four layouts, two size lists
narrow=2048x8,2048x12,2048x16,2048x20,2048x24,2048x28,2048x32,2048x40,2048x44,2048x48,2048x52,2048x56,2048x64,2048x72,2048x100,2048x120
wide=512x128,512x136,512x256,256x520,512x768,512x776,256x1000,256x1024,256x1536,256x1544,128x2048,128x2056,64x3072,64x4096,64x4104,32x8192
i=1
while [ "$i" -le "$runs" ]; do
    for layout in plain stagger off16 all16; do
        case $layout in
        plain) opts= ;;
        stagger) opts=--stagger ;;
        off16) opts="--offset 16" ;;
        all16) opts="--offset 16 --param-offset 16" ;;
        esac
        for set in narrow wide; do
            sizes=$narrow
            [ "$set" = wide ] && sizes=$wide
            # shellcheck disable=SC2086 # the layout's options, word by word
            auto_run "$tmp/$layout.$set.$i" "$layout, $set sizes, run $i" \
                --sizes "$sizes" --dtype f32,bf16 $opts
        done
    done
    i=$((i + 1))
done
# a case line: "OP OP TYPE RxD auto T PATH T PATH T  auto/best M [lo, hi]  A/A ...[  <- auto slower]"
for layout in plain stagger off16 all16; do
    awk -v runs="$runs" -v layout="$layout" '
    FNR == 1 { n = split(FILENAME, f, "."); run = f[n] }
    $5 == "auto" && $7 != "" {
        key = $1 " " $2 " " $3 " " $4
        if (!(key in seen)) { seen[key] = 1; order[++ncase] = key }
        np = 0
        best = 0
        for (k = 5; k + 1 <= NF && $k != "auto/best"; k += 2) {
            np++; name[np] = $k; t[np] = $(k + 1) + 0
            if (np > 1 && (best == 0 || t[np] < best)) best = t[np]
        }
        for (p = 1; p <= np; p++) {
            pk = key SUBSEP name[p]
            if (best > 0 && (!(pk in worst) || t[p] / best > worst[pk])) worst[pk] = t[p] / best
            paths[key] = (p == 1 ? "" : paths[key] " ") name[p]
        }
        cases[run]++
        if ($0 ~ /<- auto slower/) { flagged[key]++; perrun[run]++ }
    }
    END {
        line = ""
        for (r = 1; r <= runs; r++) line = line sprintf(" %d of %d", perrun[r] + 0, cases[r] + 0)
        printf "auto-calls: %s: flagged per run:%s\n", layout, line
        for (c = 1; c <= ncase; c++) {
            key = order[c]
            if (flagged[key] < 2) continue
            n = split(paths[key], pn, " ")
            line = sprintf("  %-30s flagged in %d of %d runs; worst ratio to the fastest path:", key, flagged[key], runs)
            for (p = 1; p <= n; p++) line = line sprintf(" %s %.3f", pn[p], worst[key SUBSEP pn[p]])
            print line
        }
    }' "$tmp/$layout".*
done
