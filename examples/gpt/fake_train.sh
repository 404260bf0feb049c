#!/bin/sh
# A stand-in for sn-gpt-train in test gpt-compare: the JSON lines sn-gpt-compare reads, with
# the config hashes of the main job's two arms, SiameseNorm 0.05 lower (FAKE_SIAMESE=higher:
# 0.05 higher), seed s adding 0.00s.
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
printf '{"start":true,"norm":"%s","seed":%s,"version":"x","isa":"scalar","config_hash":"%s","steps":300,"tokens_per_step":512}\n' "$norm" "$seed" "$h"
printf '{"step":0,"val_loss":5.5}\n{"step":300,"val_loss":%s%s}\n' "$v" "$seed"
printf '{"final":true,"step":300,"val_loss":%s%s,"elapsed_s":1.0,"diverged":false}\n' "$v" "$seed"
