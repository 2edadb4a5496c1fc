// Opens every Arrow file of a psrlcb run directory (controller.arrow too,
// when the run has one) with the JavaScript
// Arrow reader (tableFromIPC) and checks row counts, column names and the
// schema metadata against what the run's manifest promises.
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { tableFromIPC } from "apache-arrow";

const dir = process.argv[2];
if (!dir) {
  console.error("usage: node check.mjs RUN_DIR");
  process.exit(2);
}
const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
const H = manifest.horizon;
const K = manifest.episodes;

const expect = {
  "policy.arrow": { columns: ["node", "parent", "step", "observation", "action", "fallback_action", "reach_prob", "value_reward", "value_bonus", "value_lcb"] },
  "model.arrow": { columns: ["param", "step", "state", "action", "next_state", "observation", "reward", "value"] },
  "coverage.arrow": { columns: ["step", "logged_histories", "iota", "covered_mass", "c_inf", "policy_nodes", "following_episodes"], rows: H },
  "episodes.arrow": { columns: ["episode_id", "split", "loglik", "reward_loglik", "bonus", "weight"], rows: K },
  "fit.arrow": { columns: ["kind", "rank", "restart", "iteration", "loglik", "heldout_loglik", "chosen", "obs_loglik", "reward_loglik", "form", "episodes", "heldout_episodes"] },
  "alpha.arrow": { columns: ["alpha", "value_reward", "value_bonus", "lcb", "iw_value", "iw_low", "iw_high", "ess", "c_inf", "cross_value_reward", "cross_value_bonus", "cross_lcb", "criterion", "cross_stderr", "saturated", "chosen"] },
};

// A belief plan's controller, when the run wrote one.
if (existsSync(join(dir, "controller.arrow"))) {
  expect["controller.arrow"] = { columns: ["kind", "step", "class", "index", "action", "state", "next_state", "value"] };
}

let failed = 0;
let passed = 0;
for (const [name, want] of Object.entries(expect)) {
  const problems = [];
  try {
    const table = tableFromIPC(readFileSync(join(dir, name)));
    const cols = table.schema.fields.map((f) => f.name);
    if (JSON.stringify(cols) !== JSON.stringify(want.columns)) {
      problems.push(`columns ${JSON.stringify(cols)}`);
    }
    if (want.rows !== undefined && table.numRows !== want.rows) {
      problems.push(`${table.numRows} rows, want ${want.rows}`);
    }
    if (table.numRows === 0) {
      problems.push("no rows");
    }
    const md = table.schema.metadata;
    if (md.get("psrlcb.schema_version") !== "1") problems.push("no psrlcb.schema_version");
    if (md.get("psrlcb.run_id") !== manifest.run_id) problems.push(`run id ${md.get("psrlcb.run_id")} != ${manifest.run_id}`);
    if (name === "policy.arrow") {
      // Reading values, not only the schema: parents precede children.
      const node = table.getChild("node").toArray();
      const parent = table.getChild("parent").toArray();
      for (let i = 0; i < table.numRows; i++) {
        if (Number(node[i]) !== i || Number(parent[i]) >= i) {
          problems.push(`row ${i}: node ${node[i]} parent ${parent[i]}`);
          break;
        }
      }
    }
    console.log(`${problems.length ? "FAIL" : "ok  "} ${name}: ${table.numRows} rows, ${cols.length} columns${problems.length ? ": " + problems.join("; ") : ""}`);
  } catch (e) {
    problems.push(String(e));
    console.log(`FAIL ${name}: ${e}`);
  }
  if (problems.length) failed++; else passed++;
}
console.log(`arrowcheck: ${passed} passed, ${failed} failed`);
process.exit(failed ? 1 : 0);
