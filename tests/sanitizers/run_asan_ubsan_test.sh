#!/bin/sh
# AddressSanitizer + UndefinedBehaviorSanitizer: configure a separate build tree with both (the
# library and the lib suites; no recovery, so the first report fails), build the library,
# convjit_lib_tests and the concurrency suite, and run the lib suites on tier 0 and with every
# configuration compiled by Xbyak inline, then the concurrency suite (eviction under pressure).
# JIT code is not instrumented (guard-page tests cover it); what is checked is every generic
# kernel, driver, rewrite and the runtime, on the randomized sweeps and the extreme-parameter
# problems.
#   run_asan_ubsan_test.sh <source dir> <work dir> <cmake> <C compiler> <C++ compiler> <generator>
# The work dir is kept between runs, so a rerun rebuilds only what changed.
set -eu
. "$(dirname "$0")/sanitized_tree.sh"
read_tree_arguments "$@"
configure_sanitized_tree "-fsanitize=address,undefined -fno-sanitize-recover=all" "-fsanitize=address,undefined"

echo "== build the library, the lib suites and the concurrency suite"
"$cmake" --build "$build" -j2 --target convjit convjit_lib_tests convjit_jit_concurrency_tests

# run_suite <binary name> <label> <environment...>: fails on any sanitizer report, a failing
# test, or a run in which no test completed.
run_suite() {
  name=$1
  label=$2
  shift 2
  binary=$(find "$build" -name "$name" -type f | head -n 1)
  test -n "$binary" || { echo "$name was not built"; exit 1; }
  log="$work/$label.log"
  echo "== run $name ($label; log: $log)"
  status=0
  # Leak checking off: the process-wide runtime and per-thread scratch live until exit by design.
  env "$@" ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
    "$binary" --gtest_color=no >"$log" 2>&1 || status=$?
  if grep -Eq "runtime error|ERROR: AddressSanitizer" "$log"; then
    grep -E -A12 "runtime error|ERROR: AddressSanitizer" "$log" | head -40
    echo "FAILED: a sanitizer reported a problem ($label)"
    exit 1
  fi
  if [ "$status" -ne 0 ]; then
    tail -40 "$log"
    echo "FAILED: $name exited with status $status ($label)"
    exit 1
  fi
  if ! grep -Eq '^\[  PASSED  \] [1-9][0-9]* tests?\.' "$log"; then
    echo "FAILED: no test ran to completion ($label)"
    exit 1
  fi
  grep -E '^\[  PASSED  \]' "$log"
}
for backend in none xbyak; do
  run_suite convjit_lib_tests "$backend" CONVJIT_BACKEND=$backend CONVJIT_HOT_THRESHOLD=0 CONVJIT_ASYNC=0 \
    CONVJIT_DECLINE_SLOWER=0
done
# Eight threads on one runtime, compiles and (in the eviction test) kernels unmapped while others
# run: a kernel freed too early would be a use after free here.
run_suite convjit_jit_concurrency_tests concurrency CONVJIT_NUM_THREADS=2
echo "asan+ubsan test passed"
