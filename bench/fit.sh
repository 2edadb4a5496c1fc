#!/usr/bin/env bash
# End-to-end benchmark of `psrlcb fit`: 1M episodes × H=10 from a random
# POMDP with 8 states, 8 observations and 4 actions (uniform behaviour),
# rank 8, one EM start, α = 1, planning exact where the node budget
# allows (here the tree is far too large, so the approximate planner runs
# with its stated gap). Prints wall time, peak RSS and the stage times.
# Targets: under 2 minutes and 2 GiB peak RSS on 2 cores.
#
# With --defaults the fit runs with every option at its default (rank
# auto: the doubling search on a subsample of 20 000 episodes with three
# EM starts per rank; α auto: the cross-fitted selection on two parts of at
# most 10⁵ episodes each; one warm start for each later fit, the final one
# on all episodes). Target: under 60 s and 1 GiB peak RSS on 2 cores (docs/speed.md).
#
# MEMORY_LIMIT passes --memory-limit (default: fit's own, half the
# machine's memory); the fit then keeps the belief planner's policy table
# to the rows that fit beside the logs. PSRLCB_MEMPROFILE=FILE writes a
# heap profile near the peak.
#
#   bash bench/fit.sh            # 1M episodes
#   bash bench/fit.sh --defaults # 1M episodes, default options
#   EPISODES=100000 bash bench/fit.sh
#   MEMORY_LIMIT=600MiB bash bench/fit.sh
#   EPISODES=10000000 MEMORY_LIMIT=4GiB bash bench/fit.sh   # 10⁸ rows
set -euo pipefail
cd "$(dirname "$0")/.."
fitargs=(--rank 8 --restarts 1 --alpha 1)
target=120
if [ "${1:-}" = "--defaults" ]; then
  fitargs=()
  target=60
elif [ -n "${1:-}" ]; then
  echo "usage: bash bench/fit.sh [--defaults]" >&2
  exit 2
fi
EPISODES=${EPISODES:-1000000}
if [ -n "${MEMORY_LIMIT:-}" ]; then
  fitargs+=(--memory-limit "$MEMORY_LIMIT")
fi
work=${WORK:-${TMPDIR:-/tmp}/psrlcb-bench-fit}
mkdir -p "$work"
go build -o "$work/psrlcb" ./cmd/psrlcb
logs="$work/logs-$EPISODES.parquet"
if [ ! -f "$logs" ]; then
  go run ./bench/gen-pomdp -states 8 -obs 8 -actions 4 -seed 1 > "$work/bench.pomdp"
  "$work/psrlcb" simulate --pomdp "$work/bench.pomdp" --horizon 10 --episodes "$EPISODES" \
    --behavior uniform --seed 1 --out "$logs"
fi
rm -rf "$work/run"
timer=()
if [ -x /usr/bin/time ]; then timer=(/usr/bin/time -v -o "$work/time.txt"); fi
start=$(date +%s.%N)
"${timer[@]}" "$work/psrlcb" fit "$logs" --out "$work/run" "${fitargs[@]}" \
  --log-format json 2>"$work/fit.log"
end=$(date +%s.%N)
echo "episodes: $EPISODES × 10 steps"
echo "options: ${fitargs[*]:-(defaults)}"
echo "wall time: $(echo "$end - $start" | bc) s (target < $target s)"
if [ -f "$work/time.txt" ]; then
  rss=$(awk -F: '/Maximum resident/ {gsub(/ /,"",$2); print $2}' "$work/time.txt")
  echo "peak RSS: $((rss / 1024)) MiB${MEMORY_LIMIT:+ (--memory-limit $MEMORY_LIMIT)}"
  # CPU seconds do not grow with the machine's load the way wall time does:
  # on 2 idle cores the wall time is at least half of them.
  cpu=$(awk -F: '/User time|System time/ {s += $2} END {printf "%.1f", s}' "$work/time.txt")
  echo "cpu time (user+sys): $cpu s"
fi
echo "stage times (s):"
grep -o '"stage_seconds": {[^}]*}' -z "$work/run/manifest.json" | tr -d '\0' | tr ',' '\n' | sed 's/"stage_seconds": {//; s/[{}"]//g; s/^ */  /'
env -u PSRLCB_MEMPROFILE "$work/psrlcb" inspect "$work/run" | head -3
echo "policy table (plan):"
grep -E '^    "(Planner|Nodes|UncoveredMass|GapBound|Value)":' "$work/run/manifest.json" | sed 's/^  /  /; s/,$//' || true
