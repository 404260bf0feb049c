#!/bin/sh
# The test command of the README: install missing dependencies, configure (or reconfigure) the
# build directory with warnings as errors, build everything and run every test suite.
# Works on a fresh clone and on an existing build directory; exits non-zero on any failure.
# The build directory is build/ unless SN_BUILD_DIR names another one.
set -eu
cd "$(dirname "$0")/.."
build=${SN_BUILD_DIR:-build}

sh tools/deps.sh

if [ -f "$build/meson-private/coredata.dat" ]; then
    # An existing build directory keeps its other options; a directory left by another meson
    # version is regenerated from scratch with --wipe.
    meson setup --reconfigure -Dwerror=true "$build" ||
        meson setup --wipe -Dwerror=true "$build"
else
    meson setup -Dwerror=true "$build"
fi
meson compile -C "$build"
meson test -C "$build" --print-errorlogs
