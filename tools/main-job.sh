#!/usr/bin/env bash
# README command 1: set up, build, and run the main job: train the seed network on Fashion-MNIST
# for one epoch through convjit (every convolution, forward and backward), then the tier table.
# Extra arguments go to seednet (e.g. --epochs 3). Shares build/ with tools/test.sh: each names
# every option it relies on, so either may run first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/tools/bootstrap.sh"
bash "$root/tools/build.sh" -DCONVJIT_BUILD_TESTS=OFF -DCONVJIT_BUILD_BENCH=OFF -DCONVJIT_BUILD_TOOLS=ON
"${BUILD_DIR:-$root/build}/tools/seednet" "$@"
