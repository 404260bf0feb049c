#!/bin/sh
# Test 'readme-example' (meson test, suite core): the C example in README.md (between the
# <!-- c-example --> markers) must be the lines of examples/minimal/minimal.c between
# "README example begins" and "README example ends", minus main()'s 4-space indent.
# Usage: check-readme.sh SOURCE_DIR
set -eu
src=$1
tmp=$(mktemp -d "${TMPDIR:-/tmp}/sn-readme.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

sed -n '/README example begins/,/README example ends/p' "$src/examples/minimal/minimal.c" |
    sed '1d;$d' | sed 's/^    //' >"$tmp/from-c"
# shellcheck disable=SC2016 # the backquotes in sed patterns are markdown fences
sed -n '/<!-- c-example -->/,/<!-- \/c-example -->/p' "$src/README.md" |
    sed -n '/^```c$/,/^```$/p' | sed '1d;$d' >"$tmp/from-readme"
[ -s "$tmp/from-c" ] || { echo "check-readme: no marked region in minimal.c" >&2; exit 1; }
[ -s "$tmp/from-readme" ] || { echo "check-readme: no c-example block in README.md" >&2; exit 1; }
if ! diff -u "$tmp/from-c" "$tmp/from-readme"; then
    echo "check-readme: FAIL: README.md's example differs from examples/minimal/minimal.c" >&2
    exit 1
fi
echo "check-readme: OK ($(wc -l <"$tmp/from-c") lines identical)"
