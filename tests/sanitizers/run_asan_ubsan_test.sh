#!/bin/sh
# AddressSanitizer + UndefinedBehaviorSanitizer: configure a separate build tree with both (the
# library and the lib suites; no recovery, so the first report fails), build the library and
# convjit_lib_tests, and run the suites on tier 0 and with every configuration compiled by Xbyak
# inline. JIT code is not instrumented (guard-page tests cover it); what is checked is every
# generic kernel, driver, rewrite and the runtime, on the randomized sweeps and the
# extreme-parameter problems.
#   run_asan_ubsan_test.sh <source dir> <work dir> <cmake> <C compiler> <C++ compiler> <generator>
# The work dir is kept between runs, so a rerun rebuilds only what changed.
set -eu
. "$(dirname "$0")/sanitized_tree.sh"
read_tree_arguments "$@"
configure_sanitized_tree "-fsanitize=address,undefined -fno-sanitize-recover=all" "-fsanitize=address,undefined"

echo "== build the library and the lib suites"
"$cmake" --build "$build" -j2 --target convjit convjit_lib_tests

binary=$(find "$build" -name convjit_lib_tests -type f | head -n 1)
test -n "$binary" || { echo "convjit_lib_tests was not built"; exit 1; }

status=0
for backend in none xbyak; do
  log="$work/$backend.log"
  echo "== run $binary with CONVJIT_BACKEND=$backend (log: $log)"
  # Leak checking off: the process-wide runtime and per-thread scratch live until exit by design.
  CONVJIT_BACKEND=$backend CONVJIT_HOT_THRESHOLD=0 CONVJIT_ASYNC=0 CONVJIT_DECLINE_SLOWER=0 \
    ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1 \
    "$binary" --gtest_color=no >"$log" 2>&1 || status=$?
  if grep -Eq "runtime error|ERROR: AddressSanitizer" "$log"; then
    grep -E -A12 "runtime error|ERROR: AddressSanitizer" "$log" | head -40
    echo "FAILED: a sanitizer reported a problem (CONVJIT_BACKEND=$backend)"
    exit 1
  fi
  if [ "$status" -ne 0 ]; then
    tail -40 "$log"
    echo "FAILED: the lib suites exited with status $status (CONVJIT_BACKEND=$backend)"
    exit 1
  fi
  if ! grep -Eq '^\[  PASSED  \] [1-9][0-9]* tests?\.' "$log"; then
    echo "FAILED: no test ran to completion (CONVJIT_BACKEND=$backend)"
    exit 1
  fi
  grep -E '^\[  PASSED  \]' "$log"
done
echo "asan+ubsan test passed"
