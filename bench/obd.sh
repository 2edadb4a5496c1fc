#!/usr/bin/env bash
# Off-policy evaluation on the Open Bandit Dataset's public sample
# (docs/evaluation.md, "Public real logs"): BTS evaluated from the
# uniform-random logs, against BTS's own click rate. The data is not part
# of psrlcb: give the obd directory of a checkout of st-tech/zr-obp (it
# holds {random,bts}/{men,women}/*.csv).
#
#   bash bench/obd.sh PATH/zr-obp/obd [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ] || [ ! -f "$1/random/men/men.csv" ]; then
	echo "usage: bash bench/obd.sh PATH/zr-obp/obd [RUNS]   (the directory holding random/men/men.csv)" >&2
	exit 2
fi
go build -o bin/psrlcb ./cmd/psrlcb
go run ./bench/obd --obd "$1" --psrlcb bin/psrlcb --runs "${2:-30}" --work bench/out/obd
