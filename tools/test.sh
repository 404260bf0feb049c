#!/bin/sh
# The test command of the README (and of CI, through .ci/run). Installs missing dependencies,
# then, each stage failing the whole run:
#   1. BUILD (build/ unless SN_BUILD_DIR names another), gcc/cc, -Dwerror=true: every default
#      test suite (core, python, examples, hardening, soak, bench smoke);
#   2. BUILD-san, clang, -Db_sanitize=address,undefined with -fno-sanitize-recover=all (any
#      UBSan report is fatal) and LeakSanitizer on: the C suites core, hardening, examples and
#      the fuzz seed corpora. The python suite is not run under ASan (it would need the ASan
#      runtime LD_PRELOADed into /usr/bin/python3 and torch); it runs in stage 1. The kernel
#      units of SIMD paths this CPU cannot run are compiled without instrumentation;
#   3. the libFuzzer harnesses of fuzz/ in BUILD-san, SN_FUZZ_SECONDS each (default 10), one
#      per core at a time (seven harnesses: 40 s plus start-up on two cores);
#   4. valgrind memcheck (--leak-check=full, errors fatal) over C test executables of BUILD
#      (SN_VALGRIND_TESTS, default a subset that takes about half a minute; '' skips), with at
#      most 48 finite-difference probes a check, as in BUILD-san (SN_TEST_FD_SMALL).
# SN_TEST_STAGES (default "1 2 3 4") selects stages. Works on a fresh clone and on existing
# build directories (reconfigured; regenerated with --wipe if left by another meson).
set -eu
cd "$(dirname "$0")/.."
build=${SN_BUILD_DIR:-build}
san=$build-san
stages=${SN_TEST_STAGES:-1 2 3 4}

sh tools/deps.sh

setup() { # DIR ARGS...: configure or reconfigure DIR with ARGS
    dir=$1
    shift
    if [ -f "$dir/meson-private/coredata.dat" ]; then
        meson setup --reconfigure "$@" "$dir" || meson setup --wipe "$@" "$dir"
    else
        meson setup "$@" "$dir"
    fi
}
stage() { echo; echo "=== tools/test.sh: $* ($(date +%T))"; }
# LOG CMD...: runs CMD with its output shown and kept in LOG, and every 60 s says how long it
# has run and the last test it finished (a sanitizer test can run for minutes in silence).
watched() {
    log=$1
    shift
    : >"$log"
    t0=$(date +%s)
    (while sleep 60; do
        last=$(grep -E '^ *[0-9]+/[0-9]+ ' "$log" | tail -n 1 | sed 's/^ *//; s/  */ /g')
        echo "... $(($(date +%s) - t0)) s in; last finished: ${last:-none yet}"
    done) &
    hb=$!
    rc=0
    "$@" >>"$log" 2>&1 &
    run=$!
    tail -n +1 -f "$log" --pid=$run &
    shown=$!
    wait $run || rc=$?
    wait $shown || :
    kill $hb 2>/dev/null || :
    return $rc
}
has_stage() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }

if has_stage 1; then
    stage "1. $build: build with -Dwerror=true, every default suite"
    setup "$build" -Dwerror=true
    meson compile -C "$build"
    meson test -C "$build" --print-errorlogs
fi

# The SIMD paths this CPU runs, from /proc/cpuinfo's flags (the CPUID bits src/runtime/cpu.c
# reads; all three where the file is missing): the sanitizer build instruments only their kernel
# units (-Dsanitized_paths), the others never run here (docs/reliability.md, stage 2).
cpu_paths() {
    [ -r /proc/cpuinfo ] || { echo avx2,avx512,avx512bf16; return; }
    flags=" $(grep -m 1 '^flags' /proc/cpuinfo | sed 's/^[^:]*://') "
    p=
    for want in "avx2:avx2 fma" "avx512:avx512f avx512bw" \
        "avx512bf16:avx512f avx512bw avx512dq avx512_bf16"; do
        ok=1
        for f in ${want#*:}; do case $flags in *" $f "*) ;; *) ok=0 ;; esac; done
        [ $ok = 1 ] && p=${p:+$p,}${want%%:*}
    done
    echo "${p:-[]}"
}
if has_stage 2 || has_stage 3; then
    stage "2. $san: clang, AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer)"
    paths=$(cpu_paths)
    echo "kernel units instrumented: the paths this CPU runs, $paths"
    CC=clang CXX=clang++ setup "$san" -Dwerror=true -Dbuildtype=debugoptimized \
        -Db_sanitize=address,undefined -Db_lundef=false -Dpython=false -Dbench=false -Dfuzz=true \
        "-Dsanitized_paths=$paths" \
        "-Dc_args=-fno-sanitize-recover=all -fsanitize=fuzzer-no-link -fno-omit-frame-pointer" \
        "-Dcpp_args=-fno-sanitize-recover=all -fno-omit-frame-pointer"
    meson compile -C "$san"
fi
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS UBSAN_OPTIONS
if has_stage 2; then
    watched "$san/stage2.log" meson test -C "$san" --print-errorlogs --timeout-multiplier 4 \
        --suite core --suite hardening --suite examples --suite fuzz-seeds
fi
if has_stage 3; then
    stage "3. fuzzing: each harness ${SN_FUZZ_SECONDS:=10} s, as many at once as there are cores"
    export SN_FUZZ_SECONDS
    if ! meson test -C "$san" --no-rebuild --print-errorlogs --suite fuzz \
        >"$san/fuzz.log" 2>&1; then
        cat "$san/fuzz.log"
        exit 1
    fi
    grep -h -E 'executions in' "$san/meson-logs/testlog.txt"
fi

valgrind_tests=${SN_VALGRIND_TESTS-errors special stream version net net-simd finite nonfinite robust}
if has_stage 4 && [ -n "$valgrind_tests" ]; then
    stage "4. valgrind memcheck on $build"
    if [ -f "$build/meson-private/coredata.dat" ] || has_stage 1; then :; else
        setup "$build" -Dwerror=true
    fi
    meson compile -C "$build"
    # the sanitizer build's cap on finite-difference probes (tests/testutil.h, tu_fd_count):
    # their float64 reference, not the library, was most of `net`'s time under valgrind
    # (50 -> 13 s)
    # shellcheck disable=SC2086 # a list of test names
    SN_TEST_FD_SMALL=1 meson test -C "$build" --print-errorlogs --timeout-multiplier 10 \
        --wrap='valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect' \
        $valgrind_tests
fi
stage "all stages passed"
