#!/usr/bin/env bash
# build.sh - build the libFuzzer targets and seed their corpora.
#
#   tests/fuzz/build.sh [OUTDIR]          (default: build-fuzz/fuzz)
#
# The targets link the frontend, IR, passes, interpreter, weights reader and
# public API from source, compiled with clang -fsanitize=fuzzer,address,undefined;
# code generation, LLVM, NVRTC and CUDA are replaced by tests/fuzz/stubs.c.
# Needs clang and libclang-rt-14-dev (tools/dev.sh fuzz installs them).
#
# Output in OUTDIR: the targets (fuzz_parse, fuzz_safetensors, fuzz_load,
# fuzz_bundle, fuzz_cache, fuzz_onnx), graph.dict, and seed corpora
# corpus/<target>/ (existing corpus files are kept, so a corpus grows across
# runs): .graph and .safetensors files from tests/ and examples/; bundles and
# cache entries written by tests/fuzz/mkseeds.c, plus real ones compiled from
# examples/mlp.graph when a graphc binary is at hand ($GRAPHC_FUZZ_CLI, else
# build/graphc; NVRTC only, no GPU); ONNX models from the onnx Python package
# (its data folder and its node tests) when it is installed.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
OUT=${1:-${GRAPHC_FUZZ_DIR:-$ROOT/build-fuzz/fuzz}}
CC=${GRAPHC_FUZZ_CC:-clang}
mkdir -p "$OUT/obj"

command -v "$CC" >/dev/null || { echo "error: $CC not found (tools/dev.sh fuzz installs it)" >&2; exit 1; }

CFLAGS="-std=gnu17 -g -O1 -fno-omit-frame-pointer -Wall -Wno-unused-parameter
        -fsanitize=address,undefined -fno-sanitize-recover=undefined
        -I$ROOT/include -I$ROOT -I${CUDA_HOME:-/usr/local/cuda}/include $(pkg-config --cflags libcjson)"
LIBS="$(pkg-config --libs libcjson) -lm -lpthread -ldl"

# Library sources the targets need (no codegen, no compiled backends): the
# .graph frontend, IR, passes, interpreter, weights, the public API; bundles,
# the runtime API and the driver-only half of the CUDA backend (the driver is
# never opened: fuzz_bundle points GRAPHC_CUDA_DRIVER at nothing); the JIT
# cache; the ONNX reader and importer. They go into one archive, so each
# target links only what it uses; tests/fuzz/stubs.c is linked as an object.
LIB_SOURCES="$(ls ir/*.c frontend/lexer.c frontend/parser.c passes/*.c driver/api.c driver/exec_context.c driver/ranged.c driver/states_api.c runtime/states.c runtime/cuda_states.c runtime/cuda_weights.c weights/*.c \
               interp/*.c driver/random.c runtime/bundle.c runtime/rt_api.c runtime/cuda_exec.c runtime/cuda_context.c runtime/launch_deps.c \
               runtime/cuda_driver.c runtime/host_exec.c runtime/threadpool.c runtime/settings.c driver/cache.c \
               driver/settings.c frontend/onnx*.c frontend/protobuf.c codegen/tuning.c runtime/launch_plan.c) tests/fuzz/stubs.c"
TARGETS="fuzz_parse fuzz_safetensors fuzz_load fuzz_bundle fuzz_cache fuzz_onnx"

# Compile each source once (only when it changed), in parallel.
objs=()
pids=()
for src in $LIB_SOURCES; do
  obj="$OUT/obj/$(echo "$src" | tr / _).o"
  objs+=("$obj")
  if [ ! -f "$obj" ] || [ "$src" -nt "$obj" ] || [ "$0" -nt "$obj" ] ||
     [ -n "$(find include ir runtime driver interp weights codegen passes frontend \( -name '*.h' -o -name '*.def' \) -newer "$obj" 2>/dev/null | head -1)" ]; then
    # shellcheck disable=SC2086
    $CC $CFLAGS -fsanitize=fuzzer-no-link -c "$src" -o "$obj" &
    pids+=($!)
    if [ ${#pids[@]} -ge "${JOBS:-2}" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  fi
done
for p in "${pids[@]}"; do wait "$p"; done
stubs=${objs[${#objs[@]}-1]}
rm -f "$OUT/obj/libgraphc_fuzz.a"
ar rcs "$OUT/obj/libgraphc_fuzz.a" "${objs[@]:0:${#objs[@]}-1}"

for t in $TARGETS; do
  # shellcheck disable=SC2086
  $CC $CFLAGS -fsanitize=fuzzer "tests/fuzz/$t.c" "$stubs" "$OUT/obj/libgraphc_fuzz.a" $LIBS -o "$OUT/$t"
done
# The seed writer: same objects, no fuzzer runtime.
# shellcheck disable=SC2086
$CC $CFLAGS tests/fuzz/mkseeds.c "$stubs" "$OUT/obj/libgraphc_fuzz.a" $LIBS -o "$OUT/mkseeds"
echo "== built $(for t in $TARGETS; do printf '%s ' "$OUT/$t"; done)"

# Dictionary for the .graph targets: keywords, punctuation, dtypes, and every
# op and attribute name from ir/ops.def (never a list kept by hand).
{
  for w in version weights graph param return true false inf nan -inf; do echo "\"$w\""; done
  for w in '->' '%' '@' '(' ')' '[' ']' '{' '}' '<' '>' ',' ';' ':' '=' '#' '"'; do
    printf '"%s"\n' "$w"
  done
  for w in f64 f32 f16 bf16 i64 i32 i8 u8 bool; do echo "\"$w\""; done
  sed -n 's/^OP([A-Z_0-9]*, *"\([a-z_0-9]*\)".*/\1/p' ir/ops.def | sort -u | sed 's/.*/"&"/'
  sed -n 's/^OP(.*, *"\([a-z_0-9]*\)", *[-0-9]*, *[-0-9]*, *[-0-9]*, *"\([^"]*\)".*/\2/p' ir/ops.def |
    tr ',' '\n' | sed 's/:.*//' | grep -v '^$' | sort -u | sed 's/.*/"&="/'
} > "$OUT/graph.dict"

# Seed corpora: every .graph file under tests/ and examples/.
for t in $TARGETS; do mkdir -p "$OUT/corpus/$t"; done
while IFS= read -r f; do
  name=$(echo "$f" | tr / _)
  cp -f "$f" "$OUT/corpus/fuzz_parse/seed_$name"
  cp -f "$f" "$OUT/corpus/fuzz_load/seed_$name"
done < <(find tests examples -name '*.graph' -not -path 'tests/fuzz/*' | sort)

# Safetensors seeds: any .safetensors under tests/ and examples/, plus small
# hand-made files covering every dtype, scalars, empty tensors and metadata.
find tests examples -name '*.safetensors' -not -path 'tests/fuzz/*' -size -64k 2>/dev/null |
  while IFS= read -r f; do cp -f "$f" "$OUT/corpus/fuzz_safetensors/seed_$(echo "$f" | tr / _)"; done

# mkst NAME JSON DATA_BYTES: header length (u64 LE), JSON padded to 8, data.
mkst() {
  local json=$2
  while [ $(( ${#json} % 8 )) -ne 0 ]; do json="$json "; done
  local n=${#json} le="" i
  for i in 0 1 2 3 4 5 6 7; do le="$le\\x$(printf %02x $(( (n >> (8 * i)) & 255 )))"; done
  { printf "$le"; printf '%s' "$json"; head -c "$3" /dev/urandom; } \
    > "$OUT/corpus/fuzz_safetensors/seed_$1.safetensors"
}
mkst f32 '{"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}}' 24
mkst all '{"a":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},"b":{"dtype":"I64","shape":[1],"data_offsets":[16,24]},"c":{"dtype":"F32","shape":[1],"data_offsets":[24,28]},"d":{"dtype":"I32","shape":[],"data_offsets":[28,32]},"e":{"dtype":"F16","shape":[1],"data_offsets":[32,34]},"f":{"dtype":"BF16","shape":[1],"data_offsets":[34,36]},"g":{"dtype":"I8","shape":[1],"data_offsets":[36,37]},"h":{"dtype":"U8","shape":[1],"data_offsets":[37,38]},"i":{"dtype":"BOOL","shape":[2],"data_offsets":[38,40]}}' 40
mkst meta '{"__metadata__":{"format":"pt","k":"v"},"x.weight":{"dtype":"BF16","shape":[4,1,2],"data_offsets":[0,16]}}' 16
mkst empty '{"z":{"dtype":"F32","shape":[0,5],"data_offsets":[0,0]},"s":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}' 3
mkst none '{}' 0
mkst escapes '{"a\"b\\c\u00e9\n":{"dtype":"I8","shape":[2,2],"data_offsets":[0,4]}}' 4
# Bundles and cache entries: hand-made ones (tests/fuzz/mkseeds.c), then real
# ones from examples/mlp.graph when a graphc binary is there (no GPU needed).
ASAN_OPTIONS=detect_leaks=0 "$OUT/mkseeds" "$OUT/corpus/fuzz_bundle" "$OUT/corpus/fuzz_cache"
CLI=${GRAPHC_FUZZ_CLI:-$ROOT/build/graphc}
if [ -x "$CLI" ] && [ ! -e "$OUT/corpus/fuzz_bundle/seed_mlp_sm80.gcx" ]; then
  tmp=$(mktemp -d)
  for a in "sm_80 --no-ptx" "sm_90"; do
    set -- $a
    GRAPHC_CACHE_DIR=$tmp/cache "$CLI" compile examples/mlp.graph --bind B=1 --arch "$@" \
      -o "$tmp/seed_mlp_${1/_/}.gcx" >/dev/null 2>&1 || true
  done
  find "$tmp" -name '*.gcx' -size -32k -exec cp -f {} "$OUT/corpus/fuzz_bundle/" \;
  find "$tmp" -name '*.gcm' -size -32k -exec cp -f {} "$OUT/corpus/fuzz_cache/" \;
  rm -rf "$tmp"
fi

# ONNX models: the onnx package's data folder and its node tests (models up
# to 4 KiB; written once, a stamp file marks it), when the package is there.
if python3 -c "import onnx" 2>/dev/null && [ ! -e "$OUT/corpus/fuzz_onnx/.seeded" ]; then
  python3 - "$OUT/corpus/fuzz_onnx" <<'PY' || echo "warning: no ONNX seeds (python onnx failed)" >&2
import os, sys, warnings
import onnx
out = sys.argv[1]
data = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data")
for root, _, files in os.walk(data):
    for f in files:
        p = os.path.join(root, f)
        if f == "model.onnx" and os.path.getsize(p) <= 16384 or f == "input_0.pb" and os.path.getsize(p) <= 1024:
            name = "seed_" + os.path.relpath(p, data).replace("/", "_")
            with open(p, "rb") as src, open(os.path.join(out, name), "wb") as dst:
                dst.write(src.read())
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from onnx.backend.test.loader import load_node_model_tests
    for c in load_node_model_tests():
        b = c.model.SerializeToString()
        if len(b) <= 4096:
            with open(os.path.join(out, "seed_node_" + c.name + ".onnx"), "wb") as f:
                f.write(b)
open(os.path.join(out, ".seeded"), "w").close()
PY
fi
echo "== corpora in $OUT/corpus: $(for t in $TARGETS; do
  printf '%s %s files  ' "$t" "$(ls "$OUT/corpus/$t" | wc -l)"; done)"
