#!/bin/sh
# Installs what building, testing and the examples of libsiamesenorm need on Debian 12, and
# only what is missing: running it again changes nothing. Non-interactive. As root it installs
# with apt-get; otherwise it lists the missing packages and exits with status 1.
set -eu

# python3-venv, python3-pip, python3-setuptools: the test python-install (pip install ./python
# into a venv, offline with --no-build-isolation). fortunes: sn-gpt-train's default corpus, its
# text checked by checksum at every start (Debian 12 ships version 1:1.99.1-7.3).
packages="meson ninja-build gcc g++ clang pkg-config binutils python3-numpy python3-torch
python3-cffi python3-venv python3-pip python3-setuptools libopenblas-dev gnuplot-nox cmake
valgrind libclang-rt-dev clang-format openmpi-bin libopenmpi-dev fortunes"

missing=
for p in $packages; do
    if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
        missing="$missing $p"
    fi
done

if [ -z "$missing" ]; then
    echo "deps.sh: all dependencies are installed"
    exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
    echo "deps.sh: missing packages:$missing" >&2
    echo "deps.sh: install them as root: apt-get install -y$missing" >&2
    exit 1
fi

echo "deps.sh: installing:$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086 # one word per package
apt-get install -y -q --no-install-recommends $missing
