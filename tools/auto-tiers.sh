#!/bin/sh
# Is SN_ISA_AUTO within noise of the fastest forced path at every size tier? The size-tier
# counterpart of tools/auto-calls.sh, whose sizes stay near the L2.
#
#   tools/auto-tiers.sh [BUILD_DIR [RUNS [OPS]]]   (defaults: build, 2, "norm bwd"; about 75 s
#                                                  a run on a 2-core VM)
#
# `auto` tells a call's size apart by tier (src/drive/drive.h, SN_D_PAST_L2_MIN_BYTES and
# SN_D_FAR_MIN_BYTES): tier 0 up to 3 MiB of matrices, 1 up to 8 MiB, 2 beyond, 3 streamed. Runs
# `sn-auto-calls --ops OPS --dtype f32` at 16 widths (one or two of every width class from 128
# to 2048, odd multiples of 8 among them) and 12 sizes each, from 1.5 to 38 MB of the norm
# backward's three R x D fp32 matrices (x, dy and dx: 12 R D bytes), on 4 KiB boundaries and
# staggered, RUNS processes each. Then, per operation, width and tier (counted as 12 R D bytes;
# a call with more matrices reaches each tier at fewer rows), it prints the median of auto's
# ratio to the fastest forced path, how many cells `sn-auto-calls` flagged (auto slower beyond
# that run's A/A floor), and the median ratio of the AVX2 path's time to the AVX-512 path's.
# A width whose flagged cells cluster in one tier is the check of issue 28's point 5 there; its
# AVX2 / AVX-512 ratio tells which path `auto` should take. Nothing here is part of the
# pass/fail suite: timings are not tests.
set -eu
# shellcheck source=SCRIPTDIR/auto-lib.sh # (sets ac, runs, tmp)
. "$(dirname "$0")/auto-lib.sh"
auto_setup auto-tiers "[BUILD_DIR [RUNS [OPS]]]" "${1:-build}" "${2:-2}" 32 # two layouts, 16 widths
ops=${3:-norm bwd}
# OPS must name at least one operation (sn-auto-calls --ops: a substring of its names)
if [ "$("$ac" --sizes 64x128 --ops "$ops" --dtype f32 --rounds 5 2>/dev/null |
    awk '$5 == "auto"' | wc -l)" -eq 0 ]; then
    echo "auto-tiers: no operation of sn-auto-calls matches '$ops' (e.g. 'norm bwd', 'fuse')" >&2
    exit 2
fi
widths="128 136 192 200 240 256 264 392 512 520 768 776 1000 1024 1544 2048"
mbs="1.5 2 2.5 3 3.5 4.1 5 6 8 12 20 38"
i=1
while [ "$i" -le "$runs" ]; do
    for layout in plain stagger; do
        opts=
        [ "$layout" = stagger ] && opts=--stagger
        for d in $widths; do
            # R for each size: 12 R D bytes = MB x 10^6, at least 1
            sizes=$(echo "$mbs" | awk -v d="$d" '{
                for (k = 1; k <= NF; k++) {
                    r = int($k * 1e6 / (12 * d) + 0.5); if (r < 1) r = 1
                    printf "%s%dx%d", (k > 1 ? "," : ""), r, d
                } }')
            # shellcheck disable=SC2086 # the layout's option
            auto_run "$tmp/$layout.$d.$i" "$layout, width $d, run $i" \
                --sizes "$sizes" --ops "$ops" --dtype f32 $opts
        done
    done
    i=$((i + 1))
done
# a case line: "OP OP TYPE RxD auto T avx2 T avx512 T  auto/best M [lo, hi]  A/A ...[  <- auto slower]"
cat "$tmp"/plain.* "$tmp"/stagger.* | awk -v runs="$runs" '
function median(list, k, v, n, a, b, t) {
    n = split(list, v, " ")
    for (a = 2; a <= n; a++) { t = v[a] + 0; for (b = a - 1; b >= 1 && v[b] + 0 > t; b--) v[b + 1] = v[b]; v[b + 1] = t }
    return n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
}
$5 == "auto" && $6 != "" {
    op = $1 " " $2
    split($4, rd, "x")
    bytes = 12 * rd[1] * rd[2]
    tier = bytes > 8 * 1048576 ? 2 : bytes > 3 * 1048576 ? 1 : 0
    x2 = x5 = 0
    for (k = 7; k + 1 <= NF && $k != "auto/best"; k += 2) {
        if ($k == "avx2") x2 = $(k + 1)
        if ($k == "avx512") x5 = $(k + 1)
    }
    for (k = 7; k <= NF; k++) if ($k == "auto/best") ratio = $(k + 1)
    key = op SUBSEP rd[2] SUBSEP tier
    if (!(op in seenop)) { seenop[op] = 1; order[++nop] = op }
    width[rd[2]] = 1
    r[key] = r[key] " " ratio
    if (x2 > 0 && x5 > 0) p[key] = p[key] " " x2 / x5
    cells[key]++
    if ($0 ~ /<- auto slower/) flagged[key]++
}
END {
    nw = 0
    for (w in width) wl[++nw] = w + 0
    for (a = 2; a <= nw; a++) { t = wl[a]; for (b = a - 1; b >= 1 && wl[b] > t; b--) wl[b + 1] = wl[b]; wl[b + 1] = t }
    printf "auto-tiers: %d run(s), plain and staggered; per cell: median auto/best, flagged of cells, median avx2/avx512\n", runs
    for (o = 1; o <= nop; o++) {
        printf "%s (f32)\n  %6s  %-28s  %-28s  %-28s\n", order[o], "width", "tier 0 (up to 3 MiB)", "tier 1 (3 .. 8 MiB)", "tier 2 (8 .. 40 MiB)"
        for (a = 1; a <= nw; a++) {
            line = sprintf("  %6d", wl[a])
            for (tier = 0; tier <= 2; tier++) {
                key = order[o] SUBSEP wl[a] SUBSEP tier
                if (!(key in cells)) { line = line sprintf("  %-28s", "-"); continue }
                cell = sprintf("%.3f, %d of %d", median(r[key]), flagged[key] + 0, cells[key])
                if (key in p) cell = cell sprintf(", %.3f", median(p[key]))
                line = line sprintf("  %-28s", cell)
                all += cells[key]; allf += flagged[key]
            }
            print line
        }
    }
    printf "auto-tiers: flagged %d of %d cells\n", allf, all
}'
