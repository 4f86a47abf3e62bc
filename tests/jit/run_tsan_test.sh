#!/bin/sh
# ThreadSanitizer test: configure a separate build tree with -fsanitize=thread (library and
# tests), build only the library, the concurrency suite and the team's suite, and run them. Fails on any
# TSan report (halt_on_error=1 makes the first one fatal; the output is also checked).
#   run_tsan_test.sh <source dir> <work dir> <cmake> <C compiler> <C++ compiler> <generator>
# The work dir is kept between runs, so a rerun rebuilds only what changed.
set -eu
. "$(dirname "$0")/../sanitizers/sanitized_tree.sh"
read_tree_arguments "$@"
configure_sanitized_tree -fsanitize=thread -fsanitize=thread  # Xbyak, the default backend; no LLVM

echo "== build the library, the concurrency suite and the internal suites (the thread team)"
"$cmake" --build "$build" -j2 --target convjit convjit_jit_concurrency_tests convjit_internal_tests

# The runtime with its calls on two threads: eight test threads calling one Runtime while its
# compile worker runs and the thread team splits their calls, all instrumented; then the team's
# own suite (many callers, nested calls).
run_suite() {
  name=$1
  filter=$2
  binary=$(find "$build" -name "$name" -type f | head -n 1)
  test -n "$binary" || { echo "$name was not built"; exit 1; }
  log="$work/$name.log"
  echo "== run $binary --gtest_filter=$filter (log: $log)"
  status=0
  CONVJIT_NUM_THREADS=2 TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4" \
    "$binary" --gtest_color=no --gtest_filter="$filter" >"$log" 2>&1 || status=$?
  cat "$log"
  if grep -q "ThreadSanitizer" "$log"; then
    echo "FAILED: ThreadSanitizer reported a problem in $name (exit status $status)"
    exit 1
  fi
  if [ "$status" -ne 0 ]; then
    echo "FAILED: $name exited with status $status"
    exit 1
  fi
  # Skipped for want of a JIT backend on this host: report it as skipped (ctest
  # SKIP_RETURN_CODE 77), not as a pass.
  if grep -q '^\[  SKIPPED \]' "$log"; then
    echo "SKIPPED: $name was skipped (no JIT backend?)"
    exit 77
  fi
  # A suite that ran nothing proves nothing.
  if ! grep -Eq '^\[  PASSED  \] [1-9][0-9]* tests?\.' "$log"; then
    echo "FAILED: no test of $name ran to completion under TSan"
    exit 1
  fi
}
run_suite convjit_jit_concurrency_tests '*'
run_suite convjit_internal_tests 'Team.*'
echo "tsan test passed"
