#!/bin/sh
# Prints MAJOR.MINOR.PATCH from the SN_VERSION_* macros of the header given as $1.
set -eu
v=
for part in MAJOR MINOR PATCH; do
    n=$(sed -n "s/^#define SN_VERSION_${part}[[:space:]][[:space:]]*\([0-9][0-9]*\)[[:space:]]*$/\1/p" "$1")
    case $n in ''|*[!0-9]*) echo "version.sh: no SN_VERSION_$part in $1" >&2; exit 1 ;; esac
    v=${v:+$v.}$n
done
echo "$v"
