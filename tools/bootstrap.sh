#!/usr/bin/env bash
# Installs the Debian 12 packages convjit builds, tests and benchmarks with. Run as root;
# packages already present are left alone, so a second run is quick.
set -euo pipefail

packages=(
  build-essential cmake pkg-config   # toolchain (bench/ gets OpenMP, oneDNN's threads, from GCC's libgomp)
  clang-14 libclang-rt-14-dev        # tests/fuzz: libFuzzer with AddressSanitizer + UBSan
  valgrind                           # tests/isa: a host without AVX-512 (valgrind decodes none)
  libgtest-dev                       # tests
  libbenchmark-dev                   # bench/
  nlohmann-json3-dev                 # shapes.json reader (tools, bench)
  zlib1g-dev dataset-fashion-mnist   # seednet: gzip IDX reader and the data it trains on
  libxbyak-dev                       # the Xbyak JIT backend
  llvm-19-dev                        # the LLVM ORC JIT backend (portable)
  libopenblas-dev libdnnl-dev        # benchmark comparisons
  ocl-icd-opencl-dev                 # dnnl-config.cmake looks for OpenCL and fails without it
)

# bench/plot.py only: `bootstrap.sh --plots`.
if [ "${1:-}" = "--plots" ]; then packages+=(python3-matplotlib); fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" -ne 0 ]; then
    echo "bootstrap: missing packages ${missing[*]}; run as root (sudo) to install them" >&2
    exit 1
  fi
  echo "bootstrap: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  log=$(mktemp /tmp/convjit-bootstrap.XXXXXX.log)
  if ! { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
    tail -n 30 "$log" >&2
    echo "bootstrap: apt-get failed (whole log: $log)" >&2
    exit 1
  fi
  rm -f "$log"
  echo "bootstrap: installed ${#missing[@]} packages"
fi
