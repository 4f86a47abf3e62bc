#!/usr/bin/env bash
# README command 1: set up, build, and run the main job (the seed network and the benchmark
# shapes through the library, with time to first result and per-layer timings).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/tools/bootstrap.sh"
bash "$root/tools/build.sh" -DCONVJIT_BUILD_TESTS=OFF -DCONVJIT_BUILD_BENCH=OFF
"${BUILD_DIR:-$root/build}/tools/convjit-workload" "$@"
