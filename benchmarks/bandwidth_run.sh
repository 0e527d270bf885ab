#!/usr/bin/env bash
# bandwidth_run.sh - bandwidth-bound kernels against the device's copy bandwidth.
#
#   benchmarks/bandwidth_run.sh [GRAPHC] [OUTDIR]
#
# Writes one-op (or one fused chain) graphs and times each with `graphc bench`,
# which measures the copy bandwidth (cuMemcpyDtoD) in the same process and
# prints the kernel's modeled bytes / time (runs queued back to back, as the copies
# are) as a percentage of it.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
G=${1:-$ROOT/build/graphc}
OUT=${2:-/tmp/bw-bench}
mkdir -p "$OUT"
w() {  # name, graph text
  printf "version 1;\n%s\n" "$2" > "$OUT/$1.graph"
}
w chain_f32_256M 'graph @g(%x: f32[67108864], %y: f32[67108864]) -> (f32[67108864]) {
  %a = mul(%x, %y);
  %b = add(%a, %x);
  %r = relu(%b);
  return %r;
}'
w chain_f16_256M 'graph @g(%x: f16[134217728], %y: f16[134217728]) -> (f16[134217728]) {
  %a = mul(%x, %y);
  %b = add(%a, %x);
  %r = relu(%b);
  return %r;
}'
w chain_tanh_f16_256M 'graph @g(%x: f16[134217728]) -> (f16[134217728]) {
  %a = mul(%x, %x);
  %r = tanh(%a);
  return %r;
}'
# row kernels on 256 MB inputs whatever the dtype (as the chains): the same bytes for every
# dtype. (Until 2026-12-02 the 16-bit rows had 128 MB, half the f32 bytes, and read 82-83% of
# copy where at 256 MB they read 85-87%, as f32 does: docs/performance.md.)
for dt in f32 f16 bf16; do
  es=4; [ "$dt" = f32 ] || es=2
  for R in 1024 8192; do
    rows=$(( 268435456 / R / es ))
    w softmax_${dt}_$R "graph @g(%x: $dt[$rows, $R]) -> ($dt[$rows, $R]) {
  %r = softmax(%x, axis=-1);
  return %r;
}"
    w layernorm_${dt}_$R "graph @g(%x: $dt[$rows, $R], %g: $dt[$R], %b: $dt[$R]) -> ($dt[$rows, $R]) {
  %r = layernorm(%x, %g, %b, axis=-1, eps=1e-05);
  return %r;
}"
    w rmsnorm_${dt}_$R "graph @g(%x: $dt[$rows, $R], %g: $dt[$R]) -> ($dt[$rows, $R]) {
  %r = rmsnorm(%x, %g, eps=1e-06);
  return %r;
}"
  done
done
w reduce_rows_f32 'graph @g(%x: f32[65536, 1024]) -> (f32[65536]) {
  %r = reduce_sum(%x, axes=[1]);
  return %r;
}'
w reduce_cols_f32 'graph @g(%x: f32[65536, 1024]) -> (f32[1024]) {
  %r = reduce_sum(%x, axes=[0]);
  return %r;
}'
# reductions over other axes (the reduce-split pass makes two of most of them)
w reduce_cols_f16 'graph @g(%x: f16[65536, 2048]) -> (f16[2048]) {
  %r = reduce_sum(%x, axes=[0]);
  return %r;
}'
w reduce_cols_max_bf16 'graph @g(%x: bf16[65536, 2048]) -> (bf16[2048]) {
  %r = reduce_max(%x, axes=[0]);
  return %r;
}'
w reduce_wide_cols_f32 'graph @g(%x: f32[1024, 65536]) -> (f32[65536]) {
  %r = reduce_sum(%x, axes=[0]);
  return %r;
}'
w reduce_mid_f32 'graph @g(%x: f32[256, 1024, 256]) -> (f32[256, 256]) {
  %r = reduce_sum(%x, axes=[1]);
  return %r;
}'
w reduce_outer_inner_f32 'graph @g(%x: f32[64, 1024, 1024]) -> (f32[1024]) {
  %r = reduce_sum(%x, axes=[0, 2]);
  return %r;
}'
w reduce_bn_stats_f16 'graph @g(%x: f16[64, 256, 64, 64]) -> (f16[256]) {
  %r = reduce_mean(%x, axes=[0, 2, 3]);
  return %r;
}'
# "queued ms": runs queued back to back, as the copy baseline queues its copies; GB/s and
# % copy come from that time (graphc bench's "modeled" line).
printf "%-24s %10s %10s %8s\n" case "queued ms" "GB/s" "% copy"
for f in "$OUT"/*.graph; do
  n=$(basename "$f" .graph)
  timeout 120 "$G" bench "$f" --runs 30 --warmup 5 > "$OUT/$n.txt" 2>&1
  awk -v n="$n" '/^  queued/ {ms=$2} /modeled/ {for (i=1;i<=NF;i++) if ($i=="GB/s") gb=$(i-1); if (match($0, /[0-9.]+% of copy/)) pc=substr($0, RSTART, RLENGTH - 9)} END {printf "%-24s %10s %10s %8s\n", n, ms, gb, pc}' "$OUT/$n.txt"
done
