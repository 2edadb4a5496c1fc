#!/usr/bin/env bash
# Benchmark of `psrlcb evaluate --logs --no-model`: the importance-sampling
# estimators (is, wis, pdis, wpdis with the 200-replicate bootstrap) on
# bench/fit.sh's logs, 1M episodes × H=10 (10M rows) from a random POMDP
# with 8 observations and 4 actions under the uniform behaviour. The
# evaluated policy is a stochastic policy table: at every observation the
# first action with probability 0.55, the others 0.15 each. Prints wall
# time, peak RSS and CPU time. Target: under 30 s and 1 GiB peak RSS on
# 2 cores.
#
# With --model the model-based estimators run too (a model fitted on all
# episodes and one on each half, --rank 8, and the doubly robust look-ahead
# on EPISODES_MODEL episodes, default 100 000): what the cross-fitting
# costs.
#
#   bash bench/evaluate.sh
#   EPISODES=100000 bash bench/evaluate.sh
#   bash bench/evaluate.sh --model
set -euo pipefail
cd "$(dirname "$0")/.."
model=
if [ "${1:-}" = "--model" ]; then
  model=1
elif [ -n "${1:-}" ]; then
  echo "usage: bash bench/evaluate.sh [--model]" >&2
  exit 2
fi
EPISODES=${EPISODES:-1000000}
if [ -n "$model" ]; then EPISODES=${EPISODES_MODEL:-100000}; fi
work=${WORK:-${TMPDIR:-/tmp}/psrlcb-bench-fit}
mkdir -p "$work"
go build -o "$work/psrlcb" ./cmd/psrlcb
logs="$work/logs-$EPISODES.parquet"
if [ ! -f "$work/bench.pomdp" ]; then
  go run ./bench/gen-pomdp -states 8 -obs 8 -actions 4 -seed 1 > "$work/bench.pomdp"
fi
if [ ! -f "$logs" ]; then
  "$work/psrlcb" simulate --pomdp "$work/bench.pomdp" --horizon 10 --episodes "$EPISODES" \
    --behavior uniform --seed 1 --out "$logs"
fi
table="$work/policy-table.parquet"
go run ./bench/gen-table --pomdp "$work/bench.pomdp" --out "$table" --first 0.55
args=(--no-model)
if [ -n "$model" ]; then args=(--rank 8); fi
timer=()
if [ -x /usr/bin/time ]; then timer=(/usr/bin/time -v -o "$work/time-evaluate.txt"); fi
start=$(date +%s.%N)
"${timer[@]}" "$work/psrlcb" evaluate --logs "$logs" --policy "$table" "${args[@]}" \
  2>"$work/evaluate.log" >"$work/evaluate.txt"
end=$(date +%s.%N)
echo "episodes: $EPISODES × 10 steps"
echo "options: ${args[*]}"
echo "wall time: $(echo "$end - $start" | bc) s (target < 30 s without --model)"
if [ -f "$work/time-evaluate.txt" ]; then
  rss=$(awk -F: '/Maximum resident/ {gsub(/ /,"",$2); print $2}' "$work/time-evaluate.txt")
  echo "peak RSS: $((rss / 1024)) MiB (target < 1024 MiB without --model)"
  cpu=$(awk -F: '/User time|System time/ {s += $2} END {printf "%.1f", s}' "$work/time-evaluate.txt")
  echo "cpu time (user+sys): $cpu s"
fi
head -4 "$work/evaluate.txt"
