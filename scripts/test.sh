#!/usr/bin/env bash
# The project's test command: unit, golden and end-to-end tests, then the
# independent check that the Arrow files of a real run open in another
# reader (the npm package apache-arrow, installed here on first use).
set -euo pipefail
cd "$(dirname "$0")/.."

go test -count=1 -timeout 20m ./...

# The same packages without the vector kernels (internal/simd), as on a
# processor without AVX2: the portable loops must pass the same tests and
# write the pinned outputs.
echo "== portable path (PSRLCB_PORTABLE=1)"
PSRLCB_PORTABLE=1 go test -count=1 -timeout 20m ./policy ./estimate
PSRLCB_PORTABLE=1 go test -count=1 -timeout 20m -run 'OutputsByteIdentical' ./cmd/psrlcb

# The Beam runner is a separate Go module (docs/scale-out.md). Its
# packages run one at a time (-p 1): two test processes each running an
# in-process Prism job at once lose each other's loopback worker binary
# in the temporary directory ("failed to stage /tmp/beamloopbackworker-…")
# in two runs of three; one at a time, none of ten failed.
echo "== beam module"
(cd beam && go test -count=1 -p 1 -timeout 20m ./...)

echo "== independent Arrow reader check"
if ! command -v npm >/dev/null 2>&1; then
  echo "npm not found: skipping the apache-arrow check (install Node.js to run it)"
  exit 0
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/psrlcb" ./cmd/psrlcb
"$tmp/psrlcb" fit examples/tiger-logs.parquet --out "$tmp/run" --rank 2 --restarts 2 --log-format json 2>"$tmp/fit.log"
(cd scripts/arrowcheck && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
node scripts/arrowcheck/check.mjs "$tmp/run"
# A belief plan with a small table, so the run has a controller.arrow.
"$tmp/psrlcb" fit examples/tiger-logs.parquet --out "$tmp/belief" --rank 2 --restarts 2 --alpha 0.3 --planner belief --plan-rows 40 --log-format json 2>"$tmp/fit-belief.log"
node scripts/arrowcheck/check.mjs "$tmp/belief"
