#!/bin/sh
# Package test: build and install convjit into a temporary prefix, then use the installed copy
# from an outside CMake project (find_package, shared and static targets) and from a C file
# built with pkg-config alone.
#   run_package_test.sh <source dir> <work dir> <cmake> <C compiler> <C++ compiler> <generator>
set -eu
src=$1
work=$2
cmake=$3
cc=$4
cxx=$5
generator=$6

prefix="$work/prefix"
rm -rf "$work"
mkdir -p "$work"

echo "== configure, build and install convjit into $prefix"
"$cmake" -S "$src" -B "$work/build" -G "$generator" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCONVJIT_BUILD_TESTS=OFF -DCONVJIT_BUILD_BENCH=OFF -DCMAKE_INSTALL_PREFIX="$prefix"
"$cmake" --build "$work/build" -j2
"$cmake" --install "$work/build"

for f in include/convjit/convjit.h include/convjit/convjit.hpp include/convjit/dims.hpp \
         include/convjit/ops.hpp include/convjit/error.hpp; do
  test -f "$prefix/$f" || { echo "not installed: $f"; exit 1; }
done
config=$(find "$prefix" -name convjitConfig.cmake | head -n 1)
pc=$(find "$prefix" -name convjit.pc | head -n 1)
test -n "$config" || { echo "convjitConfig.cmake not installed"; exit 1; }
test -n "$pc" || { echo "convjit.pc not installed"; exit 1; }

echo "== outside CMake project: find_package(convjit CONFIG REQUIRED)"
"$cmake" -S "$src/tests/package" -B "$work/consumer" -G "$generator" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_PREFIX_PATH="$prefix"
"$cmake" --build "$work/consumer" -j2
"$work/consumer/consumer_shared"
"$work/consumer/consumer_static"

echo "== C file built with pkg-config --cflags --libs convjit"
PKG_CONFIG_PATH=$(dirname "$pc")
export PKG_CONFIG_PATH
flags=$(pkg-config --cflags --libs convjit)
echo "pkg-config: $flags"
# shellcheck disable=SC2086
"$cc" -std=c99 -Wall -Werror "$src/tests/package/pkgconfig_main.c" $flags -o "$work/pkgconfig_main"
libdir=$(pkg-config --variable=libdir convjit)
LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/pkgconfig_main"

echo "== the same C file linked against the static library with pkg-config --static"
static_flags=$(pkg-config --static --libs-only-other --libs-only-l convjit | sed 's/-lconvjit//')
echo "pkg-config --static: $static_flags"
# shellcheck disable=SC2086
"$cc" -std=c99 -Wall -Werror "$src/tests/package/pkgconfig_main.c" $(pkg-config --cflags convjit) \
  "$libdir/libconvjit.a" $static_flags -o "$work/pkgconfig_main_static"
"$work/pkgconfig_main_static"

echo "package test passed"
