#!/usr/bin/env bash
# Times `psrlcb inspect` on the 10M-row synthetic logs as a whole process
# and compares it with DuckDB scanning the same file in-process.
#
#   bench/ingest.sh            # from the repository root
#
# Needs go, node and npm (for @duckdb/node-api, installed on first use into
# $PSRLCB_BENCH_DIR/node). Targets: inspect within 2x of DuckDB's scan and
# peak RSS under 1 GiB.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${PSRLCB_BENCH_DIR:-${TMPDIR:-/tmp}/psrlcb-bench}
file=$dir/ingest-10M.parquet
mkdir -p "$dir"

go build -o "$dir/psrlcb" ./cmd/psrlcb
if [ ! -f "$file" ]; then
  echo "generating $file ..."
  go run ./bench/gen-ingest -out "$file"
fi
ls -l "$file"

# best_inspect FILE: psrlcb inspect of FILE as a whole process, best of 3
# (as DuckDB's query below), into inspect_s; the peak RSS of the last run
# into rss_kb and its output into $dir/inspect.out.
best_inspect() {
  inspect_s=
  for run in 1 2 3; do
    start=$(date +%s.%N)
    if [ -x /usr/bin/time ]; then
      /usr/bin/time -v "$dir/psrlcb" inspect "$1" >"$dir/inspect.out" 2>"$dir/inspect.time"
      rss_kb=$(awk -F: '/Maximum resident set size/ {gsub(/ /,"",$2); print $2}' "$dir/inspect.time")
    else
      "$dir/psrlcb" inspect "$1" >"$dir/inspect.out"
      rss_kb=0
    fi
    end=$(date +%s.%N)
    s=$(echo "$end - $start" | bc -l)
    if [ -z "$inspect_s" ] || [ "$(echo "$s < $inspect_s" | bc -l)" = 1 ]; then inspect_s=$s; fi
  done
}

best_inspect "$file"
cat "$dir/inspect.out"

# The read alone, inside the process (ingest.Read into the compact codes,
# no summary): BenchmarkIngest on the same file.
read_s=$(cd ingest && TMPDIR=$(dirname "$dir") go test -run '^$' -bench 'Ingest$' -benchtime=3x . |
  awk '/BenchmarkIngest/ {print $3 / 1e9}')

# The same rows as DuckDB writes them (its defaults: Snappy, row groups of
# 122 880 rows), the kind of file the speed goal was set on.
duck_file=$dir/ingest-10M-duckdb.parquet

# DuckDB, the query timed inside its process.
node_dir=$dir/node
if [ ! -d "$node_dir/node_modules/@duckdb/node-api" ]; then
  mkdir -p "$node_dir"
  (cd "$node_dir" && npm init -y >/dev/null && npm install --silent @duckdb/node-api)
fi
cat >"$node_dir/scan.mjs" <<'JS'
import { DuckDBInstance } from '@duckdb/node-api';
const file = process.argv[2];
const db = await DuckDBInstance.create(':memory:', { threads: '2' });
const con = await db.connect();
const q = `SELECT count(*), count(DISTINCT episode_id), max(step), count(DISTINCT observation),
  count(DISTINCT action), sum(reward), min(propensity) FROM read_parquet('${file}')`;
let best = Infinity, row;
for (let i = 0; i < 3; i++) {
  const t = process.hrtime.bigint();
  const r = await con.runAndReadAll(q);
  best = Math.min(best, Number(process.hrtime.bigint() - t) / 1e9);
  row = r.getRows()[0];
}
console.log(JSON.stringify({ seconds: best, row: row.map(String) }));
JS
duck=$(node "$node_dir/scan.mjs" "$file")
duck_s=$(echo "$duck" | sed 's/.*"seconds":\([0-9.e-]*\).*/\1/')
echo "duckdb: $duck"

cat >"$node_dir/copy.mjs" <<'JS'
import { DuckDBInstance } from '@duckdb/node-api';
const [src, dst] = process.argv.slice(2);
const db = await DuckDBInstance.create(':memory:', { threads: '2' });
const con = await db.connect();
await con.run(`COPY (SELECT * FROM read_parquet('${src}')) TO '${dst}' (FORMAT PARQUET)`);
JS
if [ ! -f "$duck_file" ]; then
  node "$node_dir/copy.mjs" "$file" "$duck_file.tmp" && mv "$duck_file.tmp" "$duck_file"
fi
duck2=$(node "$node_dir/scan.mjs" "$duck_file")
duck2_s=$(echo "$duck2" | sed 's/.*"seconds":\([0-9.e-]*\).*/\1/')
first_s=$inspect_s first_rss=$rss_kb
best_inspect "$duck_file"
inspect2_s=$inspect_s inspect_s=$first_s rss_kb=$first_rss

printf 'psrlcb inspect: %.3f s wall (best of 3, whole process), peak RSS %d MiB\n' "$inspect_s" $((rss_kb / 1024))
printf 'psrlcb read:    %.3f s (ingest.Read in-process, BenchmarkIngest)\n' "$read_s"
printf 'duckdb scan:    %.3f s (best of 3, in-process)\n' "$duck_s"
printf 'ratio inspect/duckdb: %.2fx, read/duckdb: %.2fx (target <= 2x); RSS target < 1024 MiB\n' \
  "$(echo "$inspect_s / $duck_s" | bc -l)" "$(echo "$read_s / $duck_s" | bc -l)"
printf 'DuckDB-written copy: psrlcb inspect %.3f s, duckdb scan %.3f s, ratio %.2fx (target <= 2x)\n' \
  "$inspect2_s" "$duck2_s" "$(echo "$inspect2_s / $duck2_s" | bc -l)"
