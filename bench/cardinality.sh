#!/usr/bin/env bash
# High-cardinality benchmark of `psrlcb fit`: 200,000 episodes × 5 steps
# (1M rows), 20,000 distinct observations (items), 50 actions; a hidden
# 4-valued segment per episode drives both the items and which action
# pays (bench/gen-card). Prints each figure against its target:
#   - fit with defaults: wall time < 300 s, peak RSS < 4 GiB;
#   - the policy beats the behaviour on held-out logs (40,000 fresh
#     episodes of the same process) by importance weighting (bench/card-iw);
#   - 100,000 item ids (more than the 65,535 symbol limit): a clear error
#     (exit 3) within seconds, never a crash;
#   - BenchmarkEMIterationCardinality: steps/s at |O| = 20,000 at least
#     half of that at |O| = 8 (|A| = 50, r = 8).
# CPU seconds are printed beside wall times: on a shared machine the wall
# time says more about the load than about psrlcb.
#
#   bash bench/cardinality.sh
#   EPISODES=50000 bash bench/cardinality.sh     # a quicker run
set -euo pipefail
cd "$(dirname "$0")/.."
EPISODES=${EPISODES:-200000}
work=${WORK:-${TMPDIR:-/tmp}/psrlcb-bench-card}
mkdir -p "$work"
go build -o "$work/psrlcb" ./cmd/psrlcb
echo "load before: $(uptime | sed 's/.*load average/load average/')"

logs="$work/card-$EPISODES.parquet"
held="$work/card-heldout.parquet"
[ -f "$logs" ] || go run ./bench/gen-card -episodes "$EPISODES" -obs 20000 -actions 50 -seed 1 -out "$logs"
[ -f "$held" ] || go run ./bench/gen-card -episodes 40000 -obs 20000 -actions 50 -seed 2 -out "$held"

timed() { # timed NAME CMD... : runs CMD under /usr/bin/time, sets rc
  local name=$1
  shift
  set +e
  /usr/bin/time -v -o "$work/$name.time" "$@" >"$work/$name.out" 2>"$work/$name.err"
  rc=$?
  set -e
}
field() { awk -F': ' -v k="$2" '$1 ~ k {gsub(/^[ \t]+/, "", $2); print $2}' "$work/$1.time"; }
seconds() { # h:mm:ss or m:ss.ss to seconds
  echo "$1" | awk -F: '{s=0; for (i=1;i<=NF;i++) s=s*60+$i; print s}'
}

echo
echo "== fit, $EPISODES episodes × 5 steps, 20,000 observations, 50 actions (defaults)"
rm -rf "$work/run"
timed fit "$work/psrlcb" fit "$logs" --out "$work/run" --log-format json
wall=$(seconds "$(field fit 'Elapsed \\(wall clock\\)')")
cpu=$(echo "$(field fit 'User time') + $(field fit 'System time')" | bc)
rss=$(field fit 'Maximum resident')
echo "exit code: $rc (target 0)"
echo "wall time: ${wall} s (target < 300 s); CPU time ${cpu} s"
echo "peak RSS: $((rss / 1024)) MiB (target < 4096 MiB)"
if [ "$rc" = 0 ]; then
  jq -r '"model: rank \(.headline.rank), form \(.parameters.model_form), α = \(.headline.alpha); plan exact: \(.headline.plan_exact), gap bound \(.headline.plan_gap)"' "$work/run/manifest.json"
  echo "stage times (s): $(jq -c '.stage_seconds' "$work/run/manifest.json")"
  go run ./bench/card-iw -policy "$work/run" -logs "$held" >"$work/iw.json"
  jq -r '"held-out (\(.episodes) episodes): behaviour mean return \(.behavior.mean|.*1000|round/1000) ± \(.behavior.stderr|.*1000|round/1000)",
         "  policy, per-decision IW \(.per_decision.mean|.*1000|round/1000) ± \(.per_decision.stderr|.*1000|round/1000) (target: above the behaviour)",
         "  policy, trajectory IW   \(.iw.mean|.*1000|round/1000) ± \(.iw.stderr|.*1000|round/1000); steps matching the policy per step \(.matched_steps)",
         "  step 1 reward: policy (IW) \(.policy_step[0].mean|.*1000|round/1000) ± \(.policy_step[0].stderr|.*1000|round/1000), behaviour \(.behavior_step[0].mean|.*1000|round/1000) ± \(.behavior_step[0].stderr|.*1000|round/1000) (target: policy above the behaviour)"' "$work/iw.json"
else
  tail -n 3 "$work/fit.err"
fi

echo
echo "== fit, 100,000 distinct item ids (above the 65,535-symbol limit)"
big="$work/card-100k.parquet"
[ -f "$big" ] || go run ./bench/gen-card -episodes 200000 -obs 100000 -actions 50 -flat 0.5 -seed 1 -out "$big"
rm -rf "$work/run100k"
timed big "$work/psrlcb" fit "$big" --out "$work/run100k" --log-format json
echo "exit code: $rc (target 3, a data error); wall time $(seconds "$(field big 'Elapsed \\(wall clock\\)')") s (target: seconds)"
echo "message: $(grep -v '^{' "$work/big.err" | tail -n 1)"

echo
echo "== BenchmarkEMIterationCardinality (|A| = 50, r = 8, 2·10⁵ episodes × 5 steps)"
go test ./estimate -run '^$' -bench EMIterationCardinality -benchtime 5x | tee "$work/bench.txt" | grep Benchmark
awk '/obs=8,/ {for (i=1;i<=NF;i++) if ($(i+1)=="steps/s") a=$i} /obs=20000,/ {for (i=1;i<=NF;i++) if ($(i+1)=="steps/s") b=$i}
     END {printf "steps/s ratio |O|=20000 / |O|=8: %.2f (target ≥ 0.5)\n", b/a}' "$work/bench.txt"
echo "load after: $(uptime | sed 's/.*load average/load average/')"
