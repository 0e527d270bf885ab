#!/usr/bin/env bash
# bench_ab.sh - two builds of graphc timed on the same examples, in turn.
#
#   benchmarks/bench_ab.sh A_DIR B_DIR [ROUNDS]     (on a machine with a GPU)
#
# Each DIR holds a `graphc` and its libgraphc.so.0 (LD_LIBRARY_PATH points at
# DIR for its runs). For every example below, A and B run `graphc bench`
# (--runs 50 --warmup 5) one after the other, ROUNDS times (default 3), so
# clocks and heat fall on both alike. Prints each round's medians and the
# median of rounds per build, with B / A: a refactor that should not change
# the kernels shows ratios of 1.00 within noise.
set -u
A=$1; B=$2; ROUNDS=${3:-3}
CASES=("mlp --bind B=4096" "mlp --bind B=1" "cnn --bind N=64" "resnet_f16 --bind N=64"
       "transformer_block --bind B=8 --bind S=1024" "transformer_block_f16 --bind B=8 --bind S=1024")

# median of the numbers on stdin
med() { sort -g | awk '{v[NR]=$1} END {if (NR==0) print "nan"; else if (NR%2) print v[(NR+1)/2]; else print (v[NR/2]+v[NR/2+1])/2}'; }

# one bench: build dir, case -> median ms (or "fail")
one() {
  local dir=$1; shift
  local f=examples/$1.graph; shift
  LD_LIBRARY_PATH="$dir:${LD_LIBRARY_PATH:-}" timeout 120 "$dir/graphc" bench "$f" "$@" \
    --runs 50 --warmup 5 2>/dev/null | awk '/^  median/ {print $2; found=1} END {if (!found) print "fail"}'
}

T=$(mktemp -d)
for c in "${CASES[@]}"; do
  for r in $(seq 1 "$ROUNDS"); do
    a=$(one "$A" $c); b=$(one "$B" $c)
    echo "$a" >> "$T/a.$(echo "$c" | tr ' =' '__')"; echo "$b" >> "$T/b.$(echo "$c" | tr ' =' '__')"
    echo "round $r  $c: A $a ms  B $b ms"
  done
done
printf '\n%-48s %10s %10s %7s\n' "example" "A ms" "B ms" "B/A"
for c in "${CASES[@]}"; do
  k=$(echo "$c" | tr ' =' '__')
  a=$(grep -v fail "$T/a.$k" | med); b=$(grep -v fail "$T/b.$k" | med)
  printf '%-48s %10s %10s %7s\n' "$c" "$a" "$b" "$(awk -v a="$a" -v b="$b" 'BEGIN {if (a+0 > 0) printf "%.3f", b / a; else print "-"}')"
done
rm -rf "$T"
