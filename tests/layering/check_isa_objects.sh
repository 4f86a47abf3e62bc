#!/bin/sh
# Kernels built for an ISA (files named *avx2* or *avx512*, compiled with its flags) must define no
# weak or unique symbol: an inline function or template they instantiate could otherwise be the
# copy the linker keeps for every file, and a host without that ISA (an AVX2-only one, for the
# AVX-512 files) would run its code through it. Their headers keep such code in anonymous
# namespaces (lib/kernels/*_impl.hpp, lane_rows.hpp, lane_columns.hpp); this checks the objects.
#   check_isa_objects.sh <object files...>   (or one ;-separated list, as ctest passes a target's objects)
set -eu
checked=0 status=0
objects=$(printf '%s;' "$@" | tr ';' '\n')
for object in $objects; do
  case "$object" in *avx512* | *avx2*) ;; *) continue ;; esac
  checked=$((checked + 1))
  shared=$(nm -C --defined-only "$object" | awk '$2 ~ /^[WwVvu]$/' || true)
  if [ -n "$shared" ]; then
    echo "$object defines symbols the linker may share with other files:"
    echo "$shared"
    status=1
  fi
done
if [ "$checked" -eq 0 ]; then echo "no ISA-specific object among the arguments"; exit 1; fi
[ $status -eq 0 ] && echo "ok: $checked ISA-specific objects define only local symbols and their entry points"
exit $status
