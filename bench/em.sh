#!/usr/bin/env bash
# Compare the EM (Baum–Welch) throughput of psrlcb's estimate package with
# pomegranate's HiddenMarkovModel on the same problem size: 8 hidden
# states, 32 discrete symbols (|O|·|A| = 8·4), episodes of 10 steps.
#
# Usage: bench/em.sh            (from anywhere inside the repository)
# Env:   PSRLCB_BENCH_EPISODES  episodes of the Go benchmark (default 1e6)
#        POMEGRANATE_SECONDS    rough time budget of the pomegranate run (default 60)
# Needs: go; the system Python 3 (/usr/bin/python3) with pomegranate's
#        HiddenMarkovModel (the pre-1.0 API) and numpy, as the Debian
#        package python3-pomegranate provides them. The script installs
#        nothing: it exits with status 2 naming what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=/usr/bin/python3
if ! command -v go >/dev/null; then
  echo "bench/em.sh: needs the go command (https://go.dev/dl/) on PATH" >&2
  exit 2
fi
if ! command -v "$PY" >/dev/null; then
  echo "bench/em.sh: needs $PY (Debian package python3; then python3-pomegranate)" >&2
  exit 2
fi
if ! "$PY" -c 'import numpy; from pomegranate import HiddenMarkovModel, DiscreteDistribution' 2>/dev/null; then
  echo "bench/em.sh: needs pomegranate's HiddenMarkovModel (pre-1.0) and numpy for $PY:" >&2
  echo "  install the Debian package python3-pomegranate (apt-get install python3-pomegranate)" >&2
  exit 2
fi

budget=${POMEGRANATE_SECONDS:-60}

pg=$("$PY" - "$budget" <<'PY'
import sys, time
import numpy as np
from pomegranate import HiddenMarkovModel, DiscreteDistribution

budget = float(sys.argv[1])
S, V, H = 8, 32, 10
rng = np.random.default_rng(1)

def model():
    dists = [DiscreteDistribution({i: p for i, p in enumerate(rng.dirichlet(np.ones(V)))}) for _ in range(S)]
    trans = rng.dirichlet(np.ones(S), size=S)
    start = rng.dirichlet(np.ones(S))
    return HiddenMarkovModel.from_matrix(trans, dists, start, ends=None)

def one_iter(n_episodes):
    seqs = [list(rng.integers(0, V, size=H)) for _ in range(n_episodes)]
    m = model()
    t0 = time.perf_counter()
    m.fit(seqs, algorithm='baum-welch', max_iterations=1, min_iterations=1, n_jobs=1, verbose=False)
    return time.perf_counter() - t0

# Calibrate on a small run, then size the main run to the budget.
n = 2000
dt = one_iter(n)
rate = n * H / dt
n = max(n, int(rate * budget / H))
dt = one_iter(n)
print(f"{n * H} {dt:.3f} {n * H / dt:.0f}")
PY
)
read -r pg_steps pg_sec pg_rate <<<"$pg"
echo "pomegranate Baum-Welch, 1 iteration, n_jobs=1: ${pg_steps} steps in ${pg_sec} s = ${pg_rate} steps/s"

go_out=$(go test -run '^$' -bench 'BenchmarkEMIteration' -benchtime 3x ./estimate/)
echo "$go_out" | grep -E '^Benchmark'
go_rate=$(echo "$go_out" | grep -E '^BenchmarkEMIteration' | tr -s ' \t' '\n' | grep -B1 '^steps/s$' | head -1)
awk -v g="$go_rate" -v p="$pg_rate" 'BEGIN { printf "psrlcb EM: %.0f steps/s; pomegranate: %.0f steps/s; ratio %.1fx\n", g, p, g / p }'
metric() { echo "$go_out" | grep -E '^BenchmarkEMIteration/' | tr -s ' \t' '\n' | grep -B1 "^$1\$" | head -1; }
printf 'psrlcb EM: %s GFLOP/s; gonum DGEMM %s GFLOP/s (share %s); FMA peak %s GFLOP/s (share %s)\n' \
  "$(metric GFLOP/s)" "$(metric dgemm-GFLOP/s)" "$(metric peak-share)" "$(metric fma-peak-GFLOP/s)" "$(metric fma-share)"
