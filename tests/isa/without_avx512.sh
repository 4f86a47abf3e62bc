#!/bin/sh
# AVX-512 code must never run on a host without AVX-512, where it would stop the process with
# SIGILL: an ISA file's function that does any work before its host check (lib/kernels/*_avx512.cpp
# "supported" functions) may run instructions of that ISA. Valgrind (3.19, Debian 12) decodes no
# AVX-512 and reports a CPU without it, so under it the library stands on such a host: every
# choice must take AVX2 code, and an AVX-512 instruction reached anyway ends the run. The outputs
# must be the bits the native build computes capped at AVX2.
#   without_avx512.sh VALGRIND OUTPUT_DIGEST JIT_STATS CASES
set -u
valgrind=$1 digest=$2 stats=$3 cases=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The seed network (forward and gradients, every configuration compiled by each backend), which
# also says the ISA the runtime chose.
for backend in xbyak llvm; do
  if ! "$valgrind" -q --tool=none "$stats" run seed --threshold 1 --backend $backend >"$work/seed" 2>&1; then
    echo "the seed network under valgrind ($backend) failed:"; cat "$work/seed"; exit 1
  fi
  chose=$(grep -o 'kernels up to [a-z0-9]*' "$work/seed")
  case "$chose" in
    *avx2) ;;
    *) echo "skipped: under this valgrind the runtime chose $chose, not avx2: it does not stand for a host" \
            "without AVX-512"; exit 77 ;;
  esac
done

# Every op of the randomized sweeps: the same bits as the native build capped at AVX2.
if ! "$valgrind" -q --tool=none "$digest" "$cases" >"$work/under_valgrind" 2>"$work/valgrind_log"; then
  echo "the sweeps under valgrind failed:"; tail -n 30 "$work/valgrind_log"; exit 1
fi
CONVJIT_MAX_ISA=avx2 "$digest" "$cases" >"$work/native_avx2" || { echo "the native run failed"; exit 1; }
if ! cmp -s "$work/under_valgrind" "$work/native_avx2"; then
  echo "outputs differ from the native AVX2 run:"; diff "$work/native_avx2" "$work/under_valgrind" | head -n 20; exit 1
fi
echo "ok: $(wc -l <"$work/native_avx2") outputs on a host without AVX-512 (valgrind), the bits of the native AVX2" \
     "run, and the seed network through both backends; no AVX-512 instruction ran"
