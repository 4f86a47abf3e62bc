#!/bin/sh
# One arrow of the layering: compiles a file holding only `#include "HEADER"` with a layer's
# include path and checks the outcome. "fails" passes only when the compiler could not find that
# header (any other error is a broken probe, not proof of the rule).
#   probe_include.sh <C++ compiler> <builds|fails> <header> [-Idir ...]
set -eu
compiler=$1 expect=$2 header=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '#include "%s"\n' "$header" >"$work/probe.cpp"
status=0
"$compiler" -std=c++20 -fsyntax-only "$@" "$work/probe.cpp" >"$work/log" 2>&1 || status=$?
case "$expect" in
  builds)
    if [ $status -ne 0 ]; then cat "$work/log"; echo "FAIL: \"$header\" should be visible here"; exit 1; fi ;;
  fails)
    if [ $status -eq 0 ]; then echo "FAIL: \"$header\" is visible here, and the layering forbids it"; exit 1; fi
    grep -q "$header: No such file or directory" "$work/log" ||
      { cat "$work/log"; echo "FAIL: the probe broke for another reason"; exit 1; } ;;
  *) echo "usage: probe_include.sh <compiler> <builds|fails> <header> [-Idir ...]"; exit 2 ;;
esac
echo "ok: \"$header\" $expect"
