#!/bin/sh
# Test 'install-consumer' (meson test, suite core): install the build into a temporary DESTDIR,
# then act as an outside project would:
#   1. pkg-config finds siamesenorm.pc; examples/minimal/minimal.c, copied out of the tree,
#      compiles with `pkg-config --cflags --libs siamesenorm`, links the installed shared
#      library (not the build tree's) and reports the runtime version equal to the header's;
#   2. the same program links statically with `pkg-config --static` (Libs.private) and runs;
#   3. the shared library exports only sn_* functions, every SN_API function of the installed
#      header among them, and its SONAME is libsiamesenorm.so.<major>.
# Usage: check-install.sh BUILD_DIR SOURCE_DIR VERSION
#        (CC: the C compiler command, possibly several words such as "ccache gcc"; default cc)
set -eu

build=$1 src=$2 version=$3
cc=${CC:-cc}
major=${version%%.*}

fail() { echo "check-install: FAIL: $*" >&2; exit 1; }
for tool in pkg-config nm readelf ${cc%% *}; do
    command -v "$tool" >/dev/null 2>&1 || { echo "check-install: $tool not found, skipping"; exit 77; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sn-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

meson install -C "$build" --no-rebuild --destdir "$tmp/root" >"$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log" >&2; fail "meson install failed"; }

pcdir=$(dirname "$(find "$tmp/root" -name siamesenorm.pc | head -n 1)")
[ -f "$pcdir/siamesenorm.pc" ] || fail "siamesenorm.pc was not installed"
echo "installed siamesenorm.pc: ${pcdir#"$tmp/root"}"

# Only the installed tree is visible to pkg-config; the sysroot maps the .pc's prefix onto it.
PKG_CONFIG_LIBDIR=$pcdir PKG_CONFIG_PATH='' PKG_CONFIG_SYSROOT_DIR=$tmp/root
export PKG_CONFIG_LIBDIR PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR
[ "$(pkg-config --modversion siamesenorm)" = "$version" ] ||
    fail "pkg-config --modversion: $(pkg-config --modversion siamesenorm), want $version"
cflags=$(pkg-config --cflags siamesenorm)
libs=$(pkg-config --libs siamesenorm)
static_libs=$(pkg-config --static --libs siamesenorm)
echo "pkg-config --cflags --libs siamesenorm: $cflags $libs"
echo "pkg-config --static --libs siamesenorm: $static_libs"
case " $static_libs " in *" -lm "*) ;; *) fail "Libs.private lacks -lm" ;; esac

libdir=
for flag in $(pkg-config --libs-only-L siamesenorm); do libdir=${flag#-L}; done
if [ -z "$libdir" ] || [ ! -d "$libdir" ]; then fail "no installed libdir in pkg-config --libs-only-L"; fi
so=$libdir/libsiamesenorm.so
[ -f "$libdir/libsiamesenorm.a" ] || fail "static library not installed in $libdir"
[ -L "$so" ] || fail "$so (the development symlink) not installed"
[ -f "$libdir/libsiamesenorm.so.$major" ] || fail "libsiamesenorm.so.$major not installed"

# An outside-tree program: the README's example, compiled in the temporary directory.
cp "$src/examples/minimal/minimal.c" "$tmp/consumer.c"
cd "$tmp"
# shellcheck disable=SC2086 # $cc and pkg-config's output are lists of words
$cc -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror consumer.c $cflags $libs -lm -o consumer ||
    fail "the consumer does not compile against the installed library"
LD_LIBRARY_PATH=$libdir ./consumer >shared.out || { cat shared.out; fail "the consumer failed"; }
cat shared.out
grep -qx "libsiamesenorm $version (header $version)" shared.out ||
    fail "the consumer did not report runtime version $version"
LD_LIBRARY_PATH=$libdir ldd ./consumer | grep -q "$libdir/libsiamesenorm.so.$major" ||
    fail "the consumer did not load the installed libsiamesenorm.so.$major"

# Static: libsiamesenorm.a, then the Libs.private of pkg-config --static (libm stays shared,
# as glibc requires).
private=$(pkg-config --static --libs-only-l siamesenorm | sed 's/-lsiamesenorm//')
# shellcheck disable=SC2086
$cc -std=c11 -O2 consumer.c $cflags -L"$libdir" -Wl,-Bstatic -lsiamesenorm -Wl,-Bdynamic \
    $private -o consumer-static ||
    fail "the consumer does not link statically with pkg-config --static"
if ldd ./consumer-static 2>/dev/null | grep -q libsiamesenorm; then
    fail "the static consumer still loads libsiamesenorm.so"
fi
./consumer-static >static.out || fail "the static consumer failed"
cmp -s shared.out static.out || fail "static and shared consumers disagree"

# Exported symbols: every defined dynamic symbol must be an sn_ name (the linker's own
# bookkeeping symbols aside), and every SN_API function of the installed header must be there.
nm -D --defined-only "$so" | awk '{print $NF}' | sort >exported
grep -v -e '^sn_' -e '^_init$' -e '^_fini$' -e '^_edata$' -e '^_end$' -e '^__bss_start$' \
    exported >foreign || true
[ -s exported ] || fail "no exported symbols in $so"
[ ! -s foreign ] || { cat foreign >&2; fail "symbols exported outside sn_"; }
header=$(find "$tmp/root" -name siamesenorm.h | head -n 1)
# Declarations start a line with SN_API and name the function before the first '('.
grep '^SN_API ' "$header" | sed 's/(.*//' | awk '{print $NF}' | tr -d '*' | sort -u >declared
[ -s declared ] || fail "no SN_API declarations found in $header"
comm -23 declared exported >missing
[ ! -s missing ] || { cat missing >&2; fail "declared in the header but not exported"; }
echo "exports: $(wc -l <exported) symbols, all sn_*; the header's $(wc -l <declared) functions present"

soname=$(readelf -d "$so" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
[ "$soname" = "libsiamesenorm.so.$major" ] || fail "SONAME is '$soname', want libsiamesenorm.so.$major"
echo "SONAME: $soname"
echo "check-install: OK"
