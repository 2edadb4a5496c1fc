package pipeline

import (
	"fmt"
	"runtime/debug"
	"unsafe"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/memlimit"
	"github.com/psrlcb/psrlcb/policy"
)

// What a fit holds per logged step, in bytes, besides the policy table:
// the compact codes of ingest.Dataset (two uint16 codes and a float64
// reward, stepPropensityBytes more with propensities), the reward's value
// code of the EM data (one byte) and the step's bonus term ‖ψ̄̂(τ_h)‖²
// (pessimism.Episodes, a float64).
const (
	stepBytes           = 2 + 2 + 8 + 1 + 8
	stepPropensityBytes = 8
	// episodeBytes is what a fit holds per episode besides its steps: the
	// id's string header and length, the logged length, and the five
	// columns of episodes.arrow (split, two log-likelihoods, bonus,
	// weight).
	episodeBytes = 16 + 4 + 4 + 4*8 + 4
)

// tableRowBytes is what the belief planner's policy table costs per row at
// the planner's peak: the row (policy.Node), its working copy while the
// table is built, and the child index (two int32 per row).
const tableRowBytes = 2*int64(unsafe.Sizeof(policy.Node{})) + 8

// minTableRows is the least row budget a memory limit lowers the table to:
// below it the limit is too small for the logs and the run says so rather
// than plan a table of a handful of rows.
const minTableRows = 10_000

// heldBytes is what a fit of d holds in memory besides the policy table
// (the figure the --memory-limit budget is checked against).
func heldBytes(d *ingest.Dataset) int64 {
	n := int64(len(d.Obs))
	b := n * stepBytes
	if d.Propensity != nil {
		b += n * stepPropensityBytes
	}
	for _, id := range d.EpisodeIDs {
		b += int64(len(id))
	}
	return b + int64(d.NumEpisodes())*episodeBytes
}

// liveBudget is the share of a memory limit the live data may fill: the
// garbage collector lets the heap grow by GOGC percent over the live data
// before it collects, so live data at limit·100/(100+GOGC) keeps the
// heap, and the resident memory, within the limit without collecting
// continually.
func liveBudget(limit int64) int64 {
	gc := debug.SetGCPercent(-1)
	debug.SetGCPercent(gc)
	if gc < 0 {
		return limit
	}
	return limit * 100 / int64(100+gc)
}

// checkMemory refuses, before any file is read, logs whose compact form
// alone exceeds the memory limit: rows is the logs' row count from the
// files' footers. The figure is a lower bound of what the fit needs (it
// counts the steps only), so a refusal is certain to be needed.
func checkMemory(rows int64, limit int64, propensity bool) error {
	if limit <= 0 {
		return nil
	}
	need := rows * stepBytes
	if propensity {
		need += rows * stepPropensityBytes
	}
	if need > liveBudget(limit) {
		return fmt.Errorf("%w: the logs' %d rows need at least %s in memory, more than --memory-limit %s allows (%s of live data); raise --memory-limit, fit a sample of the episodes, or run the E-step on a cluster with psrlcb-beam (docs/scale-out.md)",
			ErrOptions, rows, memlimit.Format(need), memlimit.Format(limit), memlimit.Format(liveBudget(limit)))
	}
	return nil
}

// tableRows is the belief planner's row budget under the memory limit:
// rows, or fewer when the table would not fit beside what the fit holds
// (with a note saying so). limit 0 is no limit.
func tableRows(rows int64, d *ingest.Dataset, limit int64) (int64, string) {
	if limit <= 0 {
		return rows, ""
	}
	free := liveBudget(limit) - heldBytes(d)
	fit := max(free/tableRowBytes, minTableRows)
	if fit >= rows {
		return rows, ""
	}
	return fit, fmt.Sprintf("--memory-limit %s: the belief planner's policy table was limited to %d rows (not %d), which with the %s the logs take fit the limit; a larger limit lets the table cover more of the policy's reach (see the plan's uncovered mass and gap bound).",
		memlimit.Format(limit), fit, rows, memlimit.Format(heldBytes(d)))
}

// checkInputMemory is checkMemory on the row count of the files' footers.
// Files whose footers cannot be listed are left to the reader, which
// reports them with its own messages.
func checkInputMemory(inputs []string, o Options) error {
	groups, err := ingest.ListRowGroups(inputs, o.Ingest)
	if err != nil {
		return nil
	}
	var rows int64
	for _, g := range groups {
		rows += g.Rows
	}
	return checkMemory(rows, o.MemoryLimit, false)
}
