#!/usr/bin/env bash
# The validation study of psrlcb evaluate --logs (docs/evaluation.md):
# off-policy estimates on logs simulated from benchmark POMDPs, against the
# exact values. Needs the shared POMDP files (PSRLCB_POMDP_DIR, default
# ../shared/pomdp). Every estimate goes to bench/out/ope.csv; an
# interrupted run resumes where it stopped. The summary goes into
# docs/evaluation.md.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${PSRLCB_POMDP_DIR:-../shared/pomdp}
if [ ! -d "$dir" ]; then
	echo "bench/ope.sh: $dir not found (set PSRLCB_POMDP_DIR to the benchmark POMDP files)" >&2
	exit 1
fi
out=${OUT:-bench/out/ope.csv}
go build -o bench/out/ope ./bench/ope
# Tiger: every estimator on 100 logs per cell, up to 10^4 episodes; the
# importance-sampling ones also at 10^5 episodes for H = 4.
bench/out/ope --pomdp "$dir/tiger.95.POMDP" --horizons 1,4,10 --episodes 100,1000,10000 \
	--seeds 100 --model-seeds 100 --model-max-episodes 10000 --out "$out" >/dev/null
bench/out/ope --pomdp "$dir/tiger.95.POMDP" --horizons 4 --episodes 100000 \
	--seeds 100 --model-seeds 0 --out "$out" >/dev/null
# Paint and shuttle (8 states): the model-based estimators up to 10^3
# episodes (each log fits three models), importance sampling up to 10^4.
bench/out/ope --pomdp "$dir/paint.95.pomdp,$dir/shuttle.95.POMDP" --horizons 1,4,10 \
	--episodes 100,1000,10000 --seeds 100 --model-seeds 100 --model-max-episodes 1000 \
	--out "$out" --docs docs/evaluation.md
