#!/usr/bin/env bash
# README command 2 (and CI): set up, build everything (library, tools, tests, benchmarks with their
# oneDNN and OpenBLAS comparisons), run the whole test suite through ctest. Fails when a part that
# bootstrap installs is not found, and when no test ran.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/tools/bootstrap.sh"
bash "$root/tools/build.sh" -DCONVJIT_BUILD_TESTS=ON -DCONVJIT_BUILD_BENCH=ON -DCONVJIT_BUILD_TOOLS=ON
ctest --test-dir "${BUILD_DIR:-$root/build}" --output-on-failure --no-tests=error -j "$(nproc)"
