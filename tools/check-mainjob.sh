#!/bin/sh
# Test 'readme-main-job' (meson test, suite examples): the README's main job (between the
# <!-- main-job --> markers) is one command that installs, builds and ends with sn-gpt-compare,
# and that last step runs here end to end on a tiny budget (the README's own flags, if any,
# followed by tiny ones). Usage: check-mainjob.sh SOURCE_DIR BUILD_DIR SCRATCH_DIR
set -eu
src=$1
build=$2
scratch=$3
# shellcheck disable=SC2016 # the backquotes in sed patterns are markdown fences
cmd=$(sed -n '/<!-- main-job -->/,/<!-- \/main-job -->/p' "$src/README.md" |
    sed -n '/^```sh$/,/^```$/p' | sed '1d;$d')
[ "$(printf '%s\n' "$cmd" | wc -l)" -eq 1 ] || {
    echo "check-mainjob: README.md must hold exactly one main-job command" >&2
    exit 1
}
echo "main job: $cmd"
case $cmd in
"sh tools/deps.sh && meson setup build && meson compile -C build && "*) ;;
*) echo "check-mainjob: FAIL: the main job must install, set up and build first" >&2; exit 1 ;;
esac
last=${cmd##*&& }
case $last in
build/examples/gpt/sn-gpt-compare*) ;;
*) echo "check-mainjob: FAIL: the main job must end with build/examples/gpt/sn-gpt-compare" >&2
   exit 1 ;;
esac
flags=${last#build/examples/gpt/sn-gpt-compare}
rm -rf "$scratch"
# shellcheck disable=SC2086 # the README's flags, word by word
"$build/examples/gpt/sn-gpt-compare" $flags --seeds 2 --no-plot --out "$scratch" -- \
    --layers 1 --width 32 --heads 2 --steps 10 --batch 4 --val-size 8 >"$scratch.txt" 2>&1 || {
    cat "$scratch.txt"
    echo "check-mainjob: FAIL: the main job's last step failed" >&2
    exit 1
}
tail -n 1 "$scratch.txt"
tail -n 1 "$scratch.txt" | grep -q '^verdict: ' || {
    echo "check-mainjob: FAIL: the main job does not end with a verdict" >&2
    exit 1
}
rm -rf "$scratch" "$scratch.txt"
echo "check-mainjob: OK"
