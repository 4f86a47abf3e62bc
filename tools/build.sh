#!/usr/bin/env bash
# Configures and builds convjit (Release) into ${BUILD_DIR:-build}, every optional part required
# (tools/bootstrap.sh installs them all). Extra arguments go to cmake's configure step.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DCONVJIT_REQUIRE_ALL=ON "$@"
cmake --build "$build" -j "$(nproc)"
