#!/bin/sh
# The include paths make each layer see only what it may (tests/layering/CMakeLists.txt); this
# closes the ways around them: a quoted include in lib/, jit/ or tools/ names a bare file (found
# through the target's include path) or a public header "convjit/..."; never a path into another
# folder ("../runtime/x.hpp", "lib/x.hpp", "xbyak/x.hpp"). The public headers include only each
# other and system headers.
#   check_includes.sh <source dir>
set -eu
cd "$1"
bad=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"[^"]*/' lib jit tools \
        --include='*.cpp' --include='*.hpp' --include='*.h' --include='*.c' | grep -v '"convjit/[^/"]*"' || true)
public=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' include | grep -v '"convjit/[^/"]*"' || true)
status=0
if [ -n "$bad" ]; then echo "includes that reach past the include path:"; echo "$bad"; status=1; fi
if [ -n "$public" ]; then echo "public headers including something internal:"; echo "$public"; status=1; fi
[ $status -eq 0 ] && echo "ok: $(grep -rlE '#[[:space:]]*include' lib jit tools include | wc -l) files checked"
exit $status
