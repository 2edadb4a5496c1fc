#!/usr/bin/env bash
# Regret against the horizon (docs/validation.md, "Regret against H"):
# for each PROBLEM:H, simulate uniform logs from the benchmark POMDP,
# `psrlcb fit` them with every option at its default, and value the
# written policy exactly under the true model with `psrlcb evaluate`.
# Prints one Markdown row per cell: planner, rank, α, table rows,
# the model probability past the table (valued by rollouts of the
# controller; "fallback" for a table without a controller), stated gap,
# normalized regret (± its Monte Carlo standard error when evaluate had
# too many histories to enumerate; its bracket when the optimum was too
# large to solve exactly and evaluate bracketed it), fit wall time (and the policy
# stage's), peak RSS. Targets (issue: planning past the history
# tree): regret ≤ 0.05 and every fit under 5 minutes on 2 cores.
#
#   bash bench/longh.sh                      # the default cells, 10⁵ episodes
#   EPISODES=10000 CELLS="tiger:10" bash bench/longh.sh
#
# Needs the benchmark POMDPs in ../shared/pomdp (POMDP_DIR to change).
set -euo pipefail
cd "$(dirname "$0")/.."
EPISODES=${EPISODES:-100000}
CELLS=${CELLS:-"tiger:10 tiger:20 paint:10 1d.noisy:10 cheese:10 cheese:20"}
POMDP_DIR=${POMDP_DIR:-../shared/pomdp}
work=${WORK:-${TMPDIR:-/tmp}/psrlcb-bench-longh}
mkdir -p "$work"
go build -o "$work/psrlcb" ./cmd/psrlcb
file_of() {
  case $1 in
  tiger) echo tiger.95.POMDP ;; cheese) echo cheese.95.POMDP ;; paint) echo paint.95.pomdp ;;
  1d.noisy) echo 1d.noisy.pomdp ;; *) echo "$1" ;;
  esac
}
echo "load before: $(uptime | sed 's/.*load average/load average/')"
echo "| problem | H | K | planner | rank | α | table rows | mass past the table | stated gap | normalized regret | fit s (policy stage s) | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
for cell in $CELLS; do
  p=${cell%%:*} H=${cell##*:}
  pomdp="$POMDP_DIR/$(file_of "$p")"
  if [ ! -f "$pomdp" ]; then
    echo "skip $cell: $pomdp not found" >&2
    continue
  fi
  logs="$work/$p-h$H-$EPISODES.parquet"
  [ -f "$logs" ] || "$work/psrlcb" simulate --pomdp "$pomdp" --horizon "$H" --episodes "$EPISODES" --seed 1 --out "$logs" >/dev/null
  run="$work/run-$p-h$H"
  start=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$work/rss.txt" "$work/psrlcb" fit "$logs" --out "$run" --force >/dev/null 2>"$work/fit.err"
  end=$(date +%s.%N)
  "$work/psrlcb" evaluate --pomdp "$pomdp" --horizon "$H" --policy "$run" --json >"$work/eval.json"
  python3 - "$p" "$H" "$EPISODES" "$run/manifest.json" "$work/eval.json" "$(echo "$end - $start" | bc)" "$(tail -1 "$work/rss.txt")" <<'PY'
import json, sys
p, H, K, man, ev, wall, rss = sys.argv[1:]
m, e = json.load(open(man)), json.load(open(ev))
pl, hp = m["plan"], m["parameters"]
rank = m.get("headline", {}).get("rank", hp.get("rank"))
alpha = m.get("headline", {}).get("alpha", pl.get("Alpha"))
reg = e["normalized_regret"]
se = e.get("policy_value_se", 0)
if reg is None and e.get("normalized_regret_bounds"):
    rb, ob = e["normalized_regret_bounds"], e["optimal_bounds"]
    reg = f"∈ [{rb['lower']:.4f}, {rb['upper']:.4f}] (V^π = {e['policy_value']:.4g}; V* ∈ [{ob['lower']:.4g}, {ob['upper']:.4g}])"
elif reg is None:
    reg = f"n/a (V^π = {e['policy_value']:.4g}; {'; '.join(e.get('notes', []))})"
elif se > 0:
    reg = f"{reg:.4f} ± {se / (e['optimal_value'] - e['behavior_value']):.4f}"
else:
    reg = f"{reg:.4f}"
if pl.get("UncoveredMass", 0) > 0:
    past = f"{pl['UncoveredMass']:.3g} (fallback)"
else:
    past = f"{pl.get('RolloutMass', 0):.3g}"
print(f"| {p} | {H} | {K} | {pl['Planner']} | {rank} | {alpha:.3g} | {pl['Nodes']} | {past} | {pl['GapBound']:.3g} | {reg} | {float(wall):.0f} ({m['stage_seconds']['policy']:.0f}) | {int(rss)//1024} |")
PY
done
