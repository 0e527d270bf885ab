#!/usr/bin/env bash
# check_layers_test.sh - the include-layer check (cmake/check_layers.cmake)
# passes on the source tree and fails, naming file and rule, on trees that
# break a rule: runtime/ including a compiler header or a codegen header,
# codegen/ including weights/, frontend/ including the interpreter.
set -u
ROOT=$1
CHECK=$ROOT/cmake/check_layers.cmake
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
fail=0

# expect_fail NAME FILE INCLUDE-LINE MESSAGE: a tree with FILE holding the line is rejected.
expect_fail() {
  local name=$1 file=$2 line=$3 msg=$4
  rm -rf "$T/src" && mkdir -p "$T/src/$(dirname "$file")"
  printf '%s\n' "$line" > "$T/src/$file"
  if out=$(cmake -DROOT="$T/src" -DSTAMP="$T/stamp" -P "$CHECK" 2>&1); then
    echo "FAIL $name: the check accepted $file: $line"; fail=1
  elif ! grep -qF "$file" <<<"$out" || ! grep -qF "$msg" <<<"$out"; then
    echo "FAIL $name: message lacks '$file' or '$msg':"; echo "$out"; fail=1
  else
    echo "ok   $name"
  fi
}

expect_fail runtime_llvm runtime/a.c '#include <llvm-c/Core.h>' "may not include a compiler's header"
expect_fail runtime_nvrtc runtime/a.h '#include <nvrtc.h>' "may not include a compiler's header"
expect_fail runtime_codegen runtime/a.c '#include "codegen/kir.h"' "runtime/ may include only"
expect_fail runtime_driver runtime/a.c '#include "driver/exec.h"' "runtime/ may include only"
expect_fail codegen_weights codegen/a.h '#include "weights/safetensors.h"' "codegen/ may include only"
expect_fail frontend_interp frontend/a.c '#include "interp/interp.h"' "frontend/ may include only"
expect_fail passes_interp passes/a.c '#include "interp/interp.h"' "passes/ may include only"
expect_fail llm_driver llm/a.c '#include "driver/exec.h"' "llm/ may include only"
expect_fail driver_llm driver/a.c '#include "llm/hf_config.h"' "driver/ may include only"
expect_fail relative_include driver/a.c '#include "exec.h"' "root-relative"

if out=$(cmake -DROOT="$ROOT" -DSTAMP="$T/stamp" -P "$CHECK" 2>&1); then
  echo "ok   source_tree"
else
  echo "FAIL source_tree:"; echo "$out"; fail=1
fi
[ $fail = 0 ] && echo "layers: all checks passed" || exit 1
