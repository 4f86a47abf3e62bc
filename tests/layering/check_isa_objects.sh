#!/bin/sh
# Kernels built for AVX-512 (files named *avx512*, compiled with its flags) must define no weak or
# unique symbol: an inline function or template they instantiate could otherwise be the copy the
# linker keeps for every file, and an AVX2-only host would run AVX-512 code through it. Their
# headers keep such code in anonymous namespaces (lib/kernels/*_impl.hpp); this checks the objects.
#   check_isa_objects.sh <object files...>   (or one ;-separated list, as ctest passes a target's objects)
set -eu
checked=0 status=0
objects=$(printf '%s;' "$@" | tr ';' '\n')
for object in $objects; do
  case "$object" in *avx512*) ;; *) continue ;; esac
  checked=$((checked + 1))
  shared=$(nm -C --defined-only "$object" | awk '$2 ~ /^[WwVvu]$/' || true)
  if [ -n "$shared" ]; then
    echo "$object defines symbols the linker may share with other files:"
    echo "$shared"
    status=1
  fi
done
if [ "$checked" -eq 0 ]; then echo "no AVX-512 object among the arguments"; exit 1; fi
[ $status -eq 0 ] && echo "ok: $checked AVX-512 objects define only local symbols and their entry points"
exit $status
