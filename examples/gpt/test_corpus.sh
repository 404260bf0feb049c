#!/bin/sh
# Test 'gpt-corpus': the default corpus, the text of Debian's fortunes package (tools/deps.sh
# installs it; this test does not skip without it: CI installs it). Its checksum and size are
# accepted and its per-file split gives the training bytes computed independently (Python,
# when the constants were set); a missing file is an error naming the package; one changed
# byte is a checksum error. $1 = sn-gpt-train, $2 = a scratch path prefix.
set -u
exe=$1
tmp=$2
. "$(dirname "$0")/testlib.sh"
tiny="--layers 1 --width 32 --heads 2 --batch 2 --steps 1 --val-size 4"
rm -rf "$tmp.dir"

# train one step with the corpus from $1 (empty: the default); the status in $rc
train() {
    "$exe" $tiny ${1:+--corpus-dir "$1"} > "$tmp.out" 2>&1
    rc=$?
    cat "$tmp.out"
}

train ""
check "the default corpus loads (checksum and size as pinned)" [ $rc -eq 0 ]
check "the default corpus is fortunes 1:1.99.1-7.3" \
    grep -q "task: next byte of fortunes (Debian fortunes 1:1.99.1-7.3) (2230465 training bytes)" \
    "$tmp.out"

mkdir -p "$tmp.dir"
train "$tmp.dir"
check "missing files: exit 1" [ $rc -eq 1 ]
check "missing files: the error names the package and deps.sh" \
    grep -q "Debian package 'fortunes' (version 1:1.99.1-7.3); install it with .sh tools/deps.sh" \
    "$tmp.out"

cp /usr/share/games/fortunes/* "$tmp.dir/" 2>/dev/null
printf 'X' | dd of="$tmp.dir/tao" bs=1 seek=100 conv=notrunc 2>/dev/null
train "$tmp.dir"
check "one changed byte: exit 1" [ $rc -eq 1 ]
check "one changed byte: a checksum error" \
    grep -q "with checksum .*: they are not the Debian package 'fortunes'" "$tmp.out"
rm -rf "$tmp.dir" "$tmp.out"
exit $fail
