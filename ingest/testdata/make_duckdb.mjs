// Writes small Parquet logs with DuckDB, so that ingest is tested on files
// written by another engine (nullable columns, DuckDB's own dictionary
// encoding, several row groups, alias column names).
//
// Regenerate (not needed at test time; the files are checked in), from the
// repository root, with a scratch directory for the npm package:
//   mkdir -p /tmp/duck && (cd /tmp/duck && npm install @duckdb/node-api)
//   cp ingest/testdata/make_duckdb.mjs /tmp/duck/ && node /tmp/duck/make_duckdb.mjs ingest/testdata
// The values follow formulas that duckdb_test.go recomputes.
import { DuckDBInstance } from '@duckdb/node-api';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = resolve(process.argv[2] ?? dirname(fileURLToPath(import.meta.url)));
const db = await DuckDBInstance.create(':memory:');
const con = await db.connect();

// 800 episodes; episode i has L = 6 steps, or 1 + i%5 steps and terminal
// when i%7 == 3.
await con.run(`
CREATE TABLE steps AS
SELECT i, h, (i % 7 = 3) AS early,
       CASE WHEN i % 7 = 3 THEN 1 + i % 5 ELSE 6 END AS len
FROM range(800) r(i), range(1, 7) s(h);
DELETE FROM steps WHERE h > len;
`);

// String ids and symbols, pscore alias, terminal column, several row
// groups (DuckDB's smallest row group is 2048 rows).
await con.run(`
COPY (
  SELECT 'ep' || lpad(i::VARCHAR, 3, '0') AS episode_id,
         h::BIGINT AS step,
         'o' || ((i * 7 + h * 3) % 5)::VARCHAR AS observation,
         'a' || ((i + h) % 3)::VARCHAR AS action,
         (i % 4) * 0.5::DOUBLE - h * 0.25::DOUBLE AS reward,
         1.0::DOUBLE / (1 + (i + h) % 4) AS pscore,
         (early AND h = len) AS terminal
  FROM steps ORDER BY (i * 37 + h * 11) % 101, i, h
) TO '${here}/duckdb_strings.parquet' (FORMAT parquet, ROW_GROUP_SIZE 2048);
`);

// Integer ids and symbols (dictionary-encoded by DuckDB), INTEGER steps
// under the alias timestep, FLOAT rewards, done alias for terminal.
await con.run(`
COPY (
  SELECT (1000 - i * 13)::BIGINT AS episode_id,
         h::INTEGER AS timestep,
         ((i * 7 + h * 3) % 12)::INTEGER AS observation,
         ((i + h) % 3)::BIGINT AS action,
         (h * 0.5)::FLOAT AS reward,
         1.0::DOUBLE / (1 + (i + h) % 4) AS propensity,
         (early AND h = len) AS done
  FROM steps WHERE i < 50 ORDER BY h DESC, i
) TO '${here}/duckdb_ints.parquet' (FORMAT parquet, ROW_GROUP_SIZE 2048);
`);

// A null reward in episode ep007 step 2 and a null observation in ep011
// step 5: both episodes are invalid.
await con.run(`
COPY (
  SELECT 'ep' || lpad(i::VARCHAR, 3, '0') AS episode_id,
         h::BIGINT AS step,
         CASE WHEN i = 11 AND h = 5 THEN NULL ELSE 'o' || ((i * 7 + h * 3) % 5)::VARCHAR END AS observation,
         'a' || ((i + h) % 3)::VARCHAR AS action,
         CASE WHEN i = 7 AND h = 2 THEN NULL ELSE (i % 4) * 0.5::DOUBLE - h * 0.25::DOUBLE END AS reward,
         (early AND h = len) AS terminal
  FROM steps WHERE i < 50 ORDER BY i, h
) TO '${here}/duckdb_nulls.parquet' (FORMAT parquet, ROW_GROUP_SIZE 2048);
`);

for (const f of ['duckdb_strings', 'duckdb_ints', 'duckdb_nulls']) {
  const r = await con.runAndReadAll(`SELECT count(*) AS n FROM parquet_metadata('${here}/${f}.parquet') WHERE column_id = 0`);
  console.log(f, 'row groups:', r.getRows()[0][0].toString());
}
