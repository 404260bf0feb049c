#!/bin/sh
# Test 'install-consumer' (meson test, suite core): install the build into a temporary DESTDIR,
# then act as an outside project would:
#   1. pkg-config finds siamesenorm.pc; examples/minimal/minimal.c, copied out of the tree,
#      compiles with `pkg-config --cflags --libs siamesenorm`, links the installed shared
#      library (not the build tree's) and reports the runtime version equal to the header's;
#   2. the same program links statically with `pkg-config --static` (Libs.private) and with
#      `pkg-config --libs siamesenorm-static` (the archive by name) and runs with no library
#      path; the installed sn-llmc-convert runs, siamesenorm_llmc.h compiles as C and C++;
#   3. the shared library exports only sn_* functions, every SN_API function of the installed
#      header among them, and its SONAME is libsiamesenorm.so.<soversion> (the major; 0.MINOR while the major is 0);
#   4. tests/hardening/consumer/consumer.c (C) and consumer.cpp (C++), which compute and check
#      a result, build with pkg-config shared and static (--static) and run;
#   5. the CMake project tests/hardening/consumer/ finds the installation with
#      find_package(siamesenorm) (the installed siamesenormConfig.cmake) and builds the same
#      two programs against siamesenorm::siamesenorm and siamesenorm::siamesenorm_static;
#      all four run and check their result;
#   6. the README's private-prefix recipe (every sh block between <!-- install-private -->
#      and <!-- /install-private -->) runs as it stands, with sh -eu, in a fresh copy of the
#      source tree, with HOME in the temporary directory and no PKG_CONFIG_* or
#      LD_LIBRARY_PATH inherited: its build directory has only the library's targets
#      (-Dtests=false -Dexamples=false -Dpython=false -Dbench=false), both consumers (the
#      LD_LIBRARY_PATH one and the rpath one) load the copy installed under HOME, the static
#      one loads none, the library-only build installed sn-llmc-convert, and the
#      second install (meson configure -Dprefix=) lands under the new prefix.
# Usage: check-install.sh BUILD_DIR SOURCE_DIR VERSION
#        (CC / CXX: the C / C++ compiler commands, possibly several words; default cc / c++)
set -eu

build=$1 src=$2 version=$3
cc=${CC:-cc}
cxx=${CXX:-c++}
major=${version%%.*}
minor=${version#*.}
minor=${minor%%.*}
# the shared object's version: as meson.build computes it
if [ "$major" = 0 ]; then major=0.$minor; fi

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
# ... and through siamesenorm-static.pc alone (the archive by name), run with no library path
static_pc=$(pkg-config --libs siamesenorm-static)
# shellcheck disable=SC2086
$cc -std=c11 -O2 consumer.c $cflags $static_pc -o consumer-static-pc ||
    fail "the consumer does not link with pkg-config --libs siamesenorm-static"
if env -u LD_LIBRARY_PATH ldd ./consumer-static-pc 2>/dev/null | grep -q libsiamesenorm; then
    fail "the siamesenorm-static consumer loads libsiamesenorm.so"
fi
env -u LD_LIBRARY_PATH ./consumer-static-pc >static-pc.out || fail "the siamesenorm-static consumer failed"
cmp -s shared.out static-pc.out || fail "the siamesenorm-static consumer disagrees"
echo "static consumer (pkg-config --libs siamesenorm-static): runs with no library path"

# The installed tool and header: sn-llmc-convert runs with no library path; siamesenorm_llmc.h
# compiles as C and C++.
conv=$(find "$tmp/root" -name sn-llmc-convert -type f | head -n 1)
if [ -z "$conv" ] || [ ! -x "$conv" ]; then fail "sn-llmc-convert was not installed"; fi
env -u LD_LIBRARY_PATH "$conv" --version | grep -q "libsiamesenorm $version" ||
    fail "the installed sn-llmc-convert does not run or report $version"
printf '#include <siamesenorm_llmc.h>\nint main(void) { sn_net n; return sn_net_init(&n, SN_PLACEMENT_PRE_NORM, 2, 4, SN_NORM_LAYERNORM, 1e-5f) || sn_llmc_check(&n, SN_LLMC_TO, 0, 0); }\n' >llmc.c
# shellcheck disable=SC2086
if ! { $cc -std=c99 -Wall -Wextra -Werror llmc.c $cflags $static_pc -o llmc-c && ./llmc-c; }; then
    fail "siamesenorm_llmc.h does not compile or check as C"
fi
cp llmc.c llmc.cpp
if command -v "${cxx%% *}" >/dev/null 2>&1; then
    # shellcheck disable=SC2086
    if ! { $cxx -std=c++11 -Wall -Wextra -Werror llmc.cpp $cflags $static_pc -o llmc-cpp &&
        ./llmc-cpp; }; then
        fail "siamesenorm_llmc.h does not compile or check as C++"
    fi
fi
echo "installed: sn-llmc-convert runs; siamesenorm_llmc.h compiles"

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

# 4. C and C++ consumers that check a computed result, shared and static, with pkg-config.
consumer_src=$src/tests/hardening/consumer
if [ -f "$consumer_src/consumer.c" ]; then
    # shellcheck disable=SC2086
    $cc -std=c99 -O2 -Wall -Wextra -Werror "$consumer_src/consumer.c" $cflags $libs -lm -o c-shared ||
        fail "consumer.c does not build with pkg-config"
    # shellcheck disable=SC2086
    $cc -std=c99 -O2 "$consumer_src/consumer.c" $cflags -L"$libdir" -Wl,-Bstatic -lsiamesenorm \
        -Wl,-Bdynamic $private -o c-static || fail "consumer.c does not link with pkg-config --static"
    LD_LIBRARY_PATH=$libdir ./c-shared || fail "the C consumer (shared) failed"
    ./c-static || fail "the C consumer (static) failed"
    if command -v "${cxx%% *}" >/dev/null 2>&1; then
        # shellcheck disable=SC2086
        $cxx -std=c++11 -O2 -Wall -Wextra -Werror "$consumer_src/consumer.cpp" $cflags $libs \
            -o cpp-shared || fail "consumer.cpp does not build with pkg-config"
        # shellcheck disable=SC2086
        $cxx -std=c++11 -O2 "$consumer_src/consumer.cpp" $cflags -L"$libdir" -Wl,-Bstatic \
            -lsiamesenorm -Wl,-Bdynamic $private -o cpp-static ||
            fail "consumer.cpp does not link with pkg-config --static"
        LD_LIBRARY_PATH=$libdir ./cpp-shared || fail "the C++ consumer (shared) failed"
        ./cpp-static || fail "the C++ consumer (static) failed"
    else
        echo "check-install: no C++ compiler ($cxx): C++ consumer skipped"
    fi

    # 5. CMake: find_package(siamesenorm) through the installed package config.
    if command -v cmake >/dev/null 2>&1 && command -v "${cxx%% *}" >/dev/null 2>&1; then
        config=$(find "$tmp/root" -name siamesenormConfig.cmake | head -n 1)
        [ -n "$config" ] || fail "siamesenormConfig.cmake was not installed"
        # CC/CXX may be several words ("ccache gcc"): hand cmake the last word as the compiler
        # the installation's prefix, inside the DESTDIR (the .pc file names it)
        prefix=$tmp/root$(sed -n 's/^prefix=//p' "$pcdir/siamesenorm.pc")
        cmake -S "$consumer_src" -B cmake-build -DCMAKE_PREFIX_PATH="$prefix" \
            -DCMAKE_C_COMPILER="${cc##* }" -DCMAKE_CXX_COMPILER="${cxx##* }" \
            -DCMAKE_BUILD_TYPE=Release >cmake.log 2>&1 || { cat cmake.log >&2; fail "cmake configure failed"; }
        grep "found siamesenorm" cmake.log
        cmake --build cmake-build >>cmake.log 2>&1 || { cat cmake.log >&2; fail "cmake build failed"; }
        for exe in consumer_c consumer_cpp; do
            LD_LIBRARY_PATH=$libdir "cmake-build/$exe" || fail "CMake $exe failed"
            LD_LIBRARY_PATH=$libdir ldd "cmake-build/$exe" | grep -q "libsiamesenorm.so.$major => $tmp/root" ||
                fail "CMake $exe did not load the installed shared library"
            "cmake-build/${exe}_static" || fail "CMake ${exe}_static failed"
            if ldd "cmake-build/${exe}_static" 2>/dev/null | grep -q libsiamesenorm; then
                fail "CMake ${exe}_static loads libsiamesenorm.so"
            fi
        done
        echo "CMake consumer: find_package(siamesenorm) OK (shared and static)"
    else
        echo "check-install: cmake or C++ compiler missing: CMake consumer skipped"
    fi
fi

# 6. The README's private-prefix recipe, literally.
if command -v meson >/dev/null 2>&1 && command -v ninja >/dev/null 2>&1; then
    # shellcheck disable=SC2016 # the backquotes in sed patterns are markdown fences
    sed -n '/<!-- install-private -->/,/<!-- \/install-private -->/p' "$src/README.md" |
        sed -n '/^```sh$/,/^```$/p' | grep -v '^```' >recipe.sh
    grep -q 'meson install' recipe.sh || fail "no install-private recipe in README.md"
    mkdir readme-src home
    for entry in "$src"/*; do # the source tree without its build directories
        case ${entry##*/} in build*) continue ;; esac
        cp -R "$entry" readme-src/
    done
    if ! (cd readme-src && env -u PKG_CONFIG_LIBDIR -u PKG_CONFIG_SYSROOT_DIR -u LD_LIBRARY_PATH \
            PKG_CONFIG_PATH= HOME="$tmp/home" sh -eux ../recipe.sh) >recipe.log 2>&1; then
        cat recipe.log >&2
        fail "the README's install-private recipe failed"
    fi
    grep -qx "libsiamesenorm $version (header $version)" recipe.log ||
        { cat recipe.log >&2; fail "the README recipe's programs did not report $version"; }
    targets=$(meson introspect readme-src/build-lib --targets | grep -o '"name": "[^"]*"' |
        sed 's/"name": "\(.*\)"/\1/' | sort -u | tr '\n' ' ')
    # the library and its kernel-path parts (sn_kernels_*), the converter it installs and the
    # programs' helper library, nothing else
    # shellcheck disable=SC2086 # one word per target
    others=$(printf '%s\n' $targets | grep -v '^sn_kernels_' | LC_ALL=C sort | tr '\n' ' ')
    [ "$others" = "siamesenorm sn-llmc-convert sn-progutil " ] ||
        fail "the library-only build has targets: $targets"
    [ -x "$tmp/home/.local/siamesenorm/bin/sn-llmc-convert" ] ||
        fail "the library-only build did not install sn-llmc-convert"
    if env -u LD_LIBRARY_PATH ldd readme-src/sn-minimal-static | grep -q libsiamesenorm; then
        fail "sn-minimal-static loads libsiamesenorm.so"
    fi
    private_lib=$tmp/home/.local/siamesenorm/lib
    for exe in sn-minimal sn-minimal-rpath; do
        [ -x "readme-src/$exe" ] || fail "the README recipe did not build $exe"
    done
    LD_LIBRARY_PATH=$private_lib ldd readme-src/sn-minimal |
        grep -q "libsiamesenorm.so.$major => $private_lib/" ||
        fail "sn-minimal (LD_LIBRARY_PATH) does not load $private_lib/libsiamesenorm.so.$major"
    env -u LD_LIBRARY_PATH ldd readme-src/sn-minimal-rpath |
        grep -q "libsiamesenorm.so.$major => $private_lib/" ||
        fail "sn-minimal-rpath does not load $private_lib/libsiamesenorm.so.$major by itself"
    [ -f "$tmp/home/opt/siamesenorm/lib/pkgconfig/siamesenorm.pc" ] ||
        fail "meson configure -Dprefix= + meson install did not install under the new prefix"
    echo "README install-private recipe: OK (library-only build: $targets)"
else
    echo "check-install: meson or ninja missing: the README's install recipe skipped"
fi
echo "check-install: OK"
