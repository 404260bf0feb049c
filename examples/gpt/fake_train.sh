#!/bin/sh
# A stand-in for sn-gpt-train in test gpt-compare: the JSON lines sn-gpt-compare reads, with
# the config hashes of the main job's two arms, SiameseNorm 0.05 lower (FAKE_SIAMESE=higher:
# 0.05 higher), seed s adding 0.00s. Two more placements for a family of comparisons, seeds
# 1..6 (each its own hash): --norm weak, lower than pre_norm by 0.003 on five seeds of six
# (paired p 0.0267: its 95% interval excludes 0, Holm's correction over three comparisons does
# not), and --norm flat, no difference (p 0.83); --norm diverges: every run diverges.
norm=siamese seed=1 log=/dev/null
while [ $# -gt 0 ]; do
    case $1 in
    --norm) norm=$2; shift ;;
    --seed) seed=$2; shift ;;
    --log) log=$2; shift ;;
    esac
    shift
done
: > "$log"
v=2.60
[ "${FAKE_SIAMESE:-lower}" = higher ] && v=2.70
h=d622df91ca6fe142
[ "$norm" = pre_norm ] && h=fced979312d84261 && v=2.65
val=$v$seed
i=$(((seed - 1) % 6 + 1))
case $norm in
weak) h=feeb1e0000000001 val=$(echo 2.647 2.651 2.647 2.654 2.650 2.654 | cut -d' ' -f$i) ;;
flat) h=f1a7000000000002 val=$(echo 2.655 2.649 2.655 2.649 2.656 2.659 | cut -d' ' -f$i) ;;
diverges)
    printf '{"start":true,"norm":"%s","seed":%s,"version":"x","isa":"scalar","config_hash":"d100000000000003","steps":300,"tokens_per_step":512}\n' "$norm" "$seed"
    printf '{"step":0,"val_loss":5.5}\n{"final":true,"step":10,"val_loss":null,"elapsed_s":1.0,"diverged":true}\n'
    exit 3 ;;
esac
printf '{"start":true,"norm":"%s","seed":%s,"version":"x","isa":"scalar","config_hash":"%s","steps":300,"tokens_per_step":512}\n' "$norm" "$seed" "$h"
printf '{"step":0,"val_loss":5.5}\n{"step":300,"val_loss":%s}\n' "$val"
printf '{"final":true,"step":300,"val_loss":%s,"elapsed_s":1.0,"diverged":false}\n' "$val"
