#!/bin/sh
# libFuzzer on the C ABI: configure a clang tree with -fsanitize=address,undefined,fuzzer-no-link
# (no recovery: the first report is fatal), build convjit_c_api_fuzz, and for each of two
# runtimes, tier 0 only (CONVJIT_BACKEND=none) and Xbyak compiling every configuration inside
# its call, replay the checked-in corpus (tests/fuzz/corpus: the seeds and every input that once
# failed) and then fuzz a fixed number of inputs from a fixed seed (scaled from <seconds>). Any
# crash, sanitizer report or contract violation fails the test and names the input libFuzzer
# saved; add that file to tests/fuzz/corpus with the fix.
#   run_fuzz_test.sh <source dir> <work dir> <cmake> <clang> <clang++> <generator> <seconds>
# The work dir is kept between runs, so a rerun rebuilds only what changed.
set -eu
. "$(dirname "$0")/../sanitizers/sanitized_tree.sh"
read_tree_arguments "$@"
seconds=$7
configure_sanitized_tree "-fsanitize=address,undefined,fuzzer-no-link -fno-sanitize-recover=all" \
  "-fsanitize=address,undefined" -DCONVJIT_BUILD_FUZZ=ON

echo "== build convjit_c_api_fuzz"
"$cmake" --build "$build" -j2 --target convjit_c_api_fuzz
fuzzer=$(find "$build" -name convjit_c_api_fuzz -type f | head -n 1)
test -n "$fuzzer" || { echo "convjit_c_api_fuzz was not built"; exit 1; }

# Leak checking off: the process-wide runtime, its kernels and the thread team live until exit.
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
for backend in none xbyak; do
  # A fixed seed and a fixed number of inputs (about the same time on each runtime here: tier 0
  # runs ~1,400 inputs/s, Xbyak compiling each ~700), so a run is repeatable and a failure is the
  # change's, not the draw's; the time is an upper bound.
  if [ "$backend" = none ]; then
    runs=$((seconds * 1000))
    set -- env CONVJIT_BACKEND=none
  else
    runs=$((seconds * 500))
    set -- env CONVJIT_BACKEND=xbyak CONVJIT_HOT_THRESHOLD=0 CONVJIT_ASYNC=0 CONVJIT_DECLINE_SLOWER=0
  fi
  found="$work/found-$backend"   # inputs this machine's runs added (libFuzzer writes to the first dir)
  mkdir -p "$found"
  log="$work/$backend.log"
  echo "== $backend: replay tests/fuzz/corpus, then fuzz $runs inputs (seed 1, at most $((2 * seconds)) s; log: $log)"
  status=0
  "$@" "$fuzzer" -runs=0 -detect_leaks=0 "$src/tests/fuzz/corpus" >"$log" 2>&1 || status=$?
  if [ "$status" -eq 0 ]; then
    "$@" "$fuzzer" -seed=1 -runs="$runs" -max_total_time=$((2 * seconds)) -timeout=60 -rss_limit_mb=6000 -detect_leaks=0 \
      -print_final_stats=1 -artifact_prefix="$work/$backend-" "$found" "$src/tests/fuzz/corpus" >>"$log" 2>&1 ||
      status=$?
  fi
  if [ "$status" -ne 0 ]; then
    grep -E -B2 -A20 "contract violated|runtime error|ERROR: (AddressSanitizer|libFuzzer)|Test unit written" "$log" | head -60
    echo "FAILED: libFuzzer stopped with status $status (CONVJIT_BACKEND=$backend); the input it saved:"
    ls -1 "$work/$backend-"* 2>/dev/null || true
    exit 1
  fi
  grep -E "^(stat::number_of_executed_units|stat::peak_rss_mb)|^#[0-9]+.*DONE" "$log" | sed "s/^/  $backend: /"
done
echo "fuzz test passed"
