#!/bin/sh
# Reproduces bench/RESULTS.md: correctness check, then the suite at 1 and 2 threads, then the tables.
#   bench/run_all.sh [BUILD_DIR] [OUT_DIR]       (defaults: /work/build-bench, BUILD_DIR/bench-results)
# Environment: REPS (default 5), MIN_TIME (default 0.2 s per benchmark and repetition),
# THREADS (default "1 2"), MAX_OTHER (cores other processes may use during a shape's run, 0.15).
# Shapes run one process each, only while the machine is otherwise idle (bench/run_quiet.py);
# the naive loops are single-threaded and are timed only in the 1-thread run.
set -eu
BUILD=${1:-/work/build-bench}
OUT=${2:-$BUILD/bench-results}
REPS=${REPS:-5}
MIN_TIME=${MIN_TIME:-0.2}
THREADS=${THREADS:-"1 2"}
MAX_OTHER=${MAX_OTHER:-0.15}
BIN=$BUILD/bench/convjit_bench
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
files=""
for t in $THREADS; do
  "$BIN" --threads="$t" --check-only > "$OUT/check$t.txt" || { cat "$OUT/check$t.txt"; echo "check failed" >&2; }
  python3 "$HERE/run_quiet.py" --bin "$BIN" --threads "$t" --reps "$REPS" --min-time "$MIN_TIME" \
    --max-other "$MAX_OTHER" --out "$OUT/threads$t.json"
  files="$files $OUT/threads$t.json"
done
# shellcheck disable=SC2086
python3 "$HERE/summarize.py" $files > "$OUT/summary.md"
echo "tables: $OUT/summary.md"
