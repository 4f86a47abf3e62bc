# Sourced by the tests that build an instrumented tree of their own (run_asan_ubsan_test.sh,
# ../jit/run_tsan_test.sh, ../fuzz/run_fuzz_test.sh). They take the same first arguments:
#   <source dir> <work dir> <cmake> <C compiler> <C++ compiler> <generator>
# read_tree_arguments sets src, work, cmake, cc, cxx, generator and build ($work/build).
read_tree_arguments() {
  src=$1
  work=$2
  cmake=$3
  cc=$4
  cxx=$5
  generator=$6
  build="$work/build"
  mkdir -p "$work"
}

# configure_sanitized_tree <compile flags> <link flags> [more cmake arguments]: the library and
# the tests (no benchmarks, no tools, no LLVM: its headers and libLLVM are not instrumented),
# built with debug information at -O1, the library's layers too (CONVJIT_LAYER_OPTIMIZATION: at
# its default -O3 the instrumented kernels alone outlasted the test's timeout on a slow host,
# bench/RESULTS.md, session 14). The work dir is kept between runs, so a rerun rebuilds only what
# changed.
configure_sanitized_tree() {
  compile_flags=$1
  link_flags=$2
  shift 2
  optimization=-O1
  echo "== configure $build with $cxx $compile_flags $optimization"
  "$cmake" -S "$src" -B "$build" -G "$generator" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="$optimization -g -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="$optimization -g -DNDEBUG" \
    -DCONVJIT_LAYER_OPTIMIZATION="$optimization" -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" \
    -DCMAKE_CXX_FLAGS="$compile_flags" -DCMAKE_C_FLAGS="$compile_flags" \
    -DCMAKE_EXE_LINKER_FLAGS="$link_flags" -DCMAKE_SHARED_LINKER_FLAGS="$link_flags" \
    -DCONVJIT_BUILD_BENCH=OFF -DCONVJIT_BUILD_TOOLS=OFF -DCONVJIT_BUILD_TESTS=ON -DCONVJIT_WITH_LLVM=OFF "$@"
}
