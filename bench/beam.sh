#!/usr/bin/env bash
# The ingest and E-step passes on Beam's in-process Prism runner against
# psrlcb's own in-process stages, on the logs of bench/fit.sh (random
# 8-state POMDP, H = 10, uniform behaviour), rank 8, one EM start, α = 1,
# a small planner budget (the planner is not what is compared). Prints the
# wall time and the ingest and estimate stage times of each, the number
# of Prism passes and their time, and compares the headline figures.
#
#   bash bench/beam.sh                  # 100k episodes (1M steps)
#   EPISODES=10000 bash bench/beam.sh
set -euo pipefail
cd "$(dirname "$0")/.."
EPISODES=${EPISODES:-100000}
work=${WORK:-${TMPDIR:-/tmp}/psrlcb-bench-beam}
mkdir -p "$work"
go build -o "$work/psrlcb" ./cmd/psrlcb
(cd beam && go build -o "$work/psrlcb-beam" ./cmd/psrlcb-beam)
logs="$work/logs-$EPISODES.parquet"
if [ ! -f "$logs" ]; then
  go run ./bench/gen-pomdp -states 8 -obs 8 -actions 4 -seed 1 > "$work/bench.pomdp"
  "$work/psrlcb" simulate --pomdp "$work/bench.pomdp" --horizon 10 --episodes "$EPISODES" \
    --behavior uniform --seed 1 --out "$logs"
fi
echo "episodes: $EPISODES × 10 steps"
for runner in local prism; do
  rm -rf "$work/run-$runner"
  timer=()
  if [ -x /usr/bin/time ]; then timer=(/usr/bin/time -f "$runner: %U s user + %S s sys CPU, peak RSS %M KiB" -o "$work/$runner.time"); fi
  start=$(date +%s.%N)
  "${timer[@]}" "$work/psrlcb-beam" fit --runner "$runner" --rank 8 --restarts 1 --alpha 1 --plan-budget 10000 \
    --out "$work/run-$runner" "$logs" >"$work/$runner.out" 2>"$work/$runner.err"
  end=$(date +%s.%N)
  echo "$runner: $(echo "$end - $start" | bc) s wall; stage seconds:" \
    $(grep -E '"(ingest|estimate)":' "$work/run-$runner/manifest.json" | tr -d ' ,')
  cat "$work/$runner.err"
  [ -f "$work/$runner.time" ] && cat "$work/$runner.time"
done
if cmp -s <(go run ./cmd/psrlcb inspect "$work/run-local" | tail -n +2) <(go run ./cmd/psrlcb inspect "$work/run-prism" | tail -n +2); then
  echo "headline figures identical"
else
  echo "headline figures differ:"; diff <(go run ./cmd/psrlcb inspect "$work/run-local") <(go run ./cmd/psrlcb inspect "$work/run-prism") || true
fi
