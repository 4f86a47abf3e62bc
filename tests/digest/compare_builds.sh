#!/bin/sh
# Do two builds compute the same bits? Runs convjit_output_digest (built in either tree) once with
# each build's libconvjit.so, on tier 0 and with every configuration compiled inline by each
# backend, at 1 and 3 threads (every call on them: CONVJIT_ADAPT_THREADS=0), and compares the digests line by line.
#   compare_builds.sh <convjit_output_digest> <old build dir> <new build dir> [cases]
# Exit 0 when every line matches; else the first differing lines and 1.
set -eu
digest=$1 old=$2 new=$3 cases=${4:-400}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for tier in none xbyak llvm; do
  for threads in 1 3; do
    for build in old new; do
      dir=$old; [ $build = new ] && dir=$new
      env LD_LIBRARY_PATH="$dir/lib" CONVJIT_BACKEND=$tier CONVJIT_HOT_THRESHOLD=0 CONVJIT_ASYNC=0 \
        CONVJIT_DECLINE_SLOWER=0 CONVJIT_NUM_THREADS=$threads CONVJIT_ADAPT_THREADS=0 "$digest" "$cases" >"$work/$build" 2>"$work/$build.err" ||
        { cat "$work/$build.err"; echo "$build build failed ($tier, $threads threads)"; exit 1; }
    done
    lines=$(wc -l <"$work/new")
    if cmp -s "$work/old" "$work/new"; then
      echo "same bits: $lines outputs, tier $tier, $threads thread(s)"
    else
      echo "DIFFERENT: tier $tier, $threads thread(s):"; diff "$work/old" "$work/new" | head -10; status=1
    fi
  done
done
exit $status
