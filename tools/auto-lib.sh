# shellcheck shell=sh
# What tools/auto-calls.sh and tools/auto-tiers.sh share, sourced by both: their argument check,
# their scratch folder, and running sn-auto-calls once per process with progress and an ETA.

# auto_setup NAME USAGE BUILD RUNS PROCESSES_PER_RUN: sets ac (BUILD's sn-auto-calls), tmp (a
# scratch folder removed at exit) and the progress counters; exits 2 with a usage line naming
# USAGE unless sn-auto-calls is built and RUNS is a number from 1 to 20.
auto_setup() {
    name=$1
    ac="$3/bench/sn-auto-calls"
    runs=$4
    n=$runs
    case $n in '' | *[!0-9]*) n=0 ;; esac # not a number: refused below
    if [ ! -x "$ac" ] || [ "$n" -lt 1 ] || [ "$n" -gt 20 ]; then
        echo "usage: tools/$name.sh $2: RUNS 1 .. 20 (here '$runs'), and BUILD_DIR/bench/sn-auto-calls" \
            "built (meson setup $3 && meson compile -C $3)" >&2
        exit 2
    fi
    total=$((runs * $5))
    done_=0
    start=$(date +%s)
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT INT TERM
}

# auto_run OUT WHAT ARGS...: runs sn-auto-calls ARGS... with its output in OUT; on failure says
# that WHAT failed, with the end of its stderr, and exits 1; then prints progress and an ETA.
auto_run() {
    out=$1
    what=$2
    shift 2
    "$ac" "$@" >"$out" 2>"$tmp/err" || {
        echo "$name: sn-auto-calls failed ($what):" >&2
        tail -5 "$tmp/err" >&2
        exit 1
    }
    done_=$((done_ + 1))
    el=$(($(date +%s) - start))
    printf '%s: %d of %d processes done, %ds elapsed, eta %ds\n' "$name" "$done_" "$total" \
        "$el" $((el * (total - done_) / done_)) >&2
}
