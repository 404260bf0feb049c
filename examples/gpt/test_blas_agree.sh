#!/bin/sh
# Test: the CBLAS build ($1) and the plain-loops build ($2) of sn-gpt-train agree: the first
# step's loss to 1e-5 relative (only the summation order differs), the val loss after 10 AdamW
# steps to 1e-3 relative (Adam normalises tiny gradients, so rounding differences grow a little).
set -u
args="--task addition --layers 2 --width 32 --heads 2 --digits 2 --batch 8 --val-size 100 --steps 10
      --eval-every 1 --json --seed 3"
a=$("$1" $args 2>/dev/null) || { echo "FAIL: cblas run"; exit 1; }
b=$("$2" $args 2>/dev/null) || { echo "FAIL: loops run"; exit 1; }
field() { # json lines, step, key
    echo "$1" | grep "\"step\":$2," | head -n 1 | sed -e "s/.*\"$3\":\([^,}]*\).*/\1/"
}
fail=0
compare() { # name, x, y, relative tolerance
    if awk -v x="$2" -v y="$3" -v tol="$4" 'BEGIN {
            d = x - y; if (d < 0) d = -d; s = x < 0 ? -x : x;
            exit !(x == x + 0 && d <= tol * s) }'; then
        echo "ok: $1: cblas $2 loops $3"
    else
        echo "FAIL: $1: cblas $2 loops $3 (tolerance $4 relative)"
        fail=1
    fi
}
compare "step 1 train loss" "$(field "$a" 1 train_loss)" "$(field "$b" 1 train_loss)" 1e-5
compare "step 10 val loss" "$(field "$a" 10 val_loss)" "$(field "$b" 10 val_loss)" 1e-3
exit $fail
