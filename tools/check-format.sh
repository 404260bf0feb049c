#!/bin/sh
# Test 'format' (meson test, suite core): every C and C++ file of the repository is formatted as
# .clang-format says (clang-format 14, Debian 12's). Skips (77) when clang-format is missing;
# tools/deps.sh installs it, so CI always checks. To fix: clang-format -i FILE...
# Usage: check-format.sh SOURCE_DIR
set -eu
cd "$1"
command -v clang-format >/dev/null 2>&1 || {
    echo "check-format: clang-format not installed (tools/deps.sh installs it): skipped"
    exit 77
}
if [ -d .git ] || [ -f .git ]; then
    files=$(git ls-files '*.c' '*.h' '*.cpp')
else
    files=$(find . -path './build*' -prune -o \( -name '*.c' -o -name '*.h' -o -name '*.cpp' \) -print)
fi
bad=0
for f in $files; do
    if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "check-format: $f differs from .clang-format (clang-format -i $f)"
        bad=$((bad + 1))
    fi
done
n=$(printf '%s\n' "$files" | wc -l) # one path a line (none has a space)
[ "$bad" -eq 0 ] || { echo "check-format: FAIL: $bad of $n files"; exit 1; }
echo "check-format: OK ($n files, $(clang-format --version | sed 's/.*version //'))"
