package pipeline

import (
	"fmt"
	"os"
	"runtime/metrics"
	"time"
	"unsafe"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/memlimit"
	"github.com/psrlcb/psrlcb/internal/spill"
	"github.com/psrlcb/psrlcb/policy"
)

// What a fit holds per logged step, in bytes, besides the policy table:
// the compact codes of ingest.Dataset (two uint16 codes and a float64
// reward, stepPropensityBytes more with propensities), the reward's value
// code of the EM data (one byte) and the step's bonus term ‖ψ̄̂(τ_h)‖²
// (pessimism.Episodes, a float32 for the report's plot).
const (
	stepBytes           = 2 + 2 + 8 + 1 + 4
	stepPropensityBytes = 8
	// episodeBytes is what a fit holds per episode besides its steps: the
	// id's string header, the logged length, the bonus terms' sum, and the
	// columns of episodes.arrow (split, two log-likelihoods, bonus,
	// weight).
	episodeBytes = 16 + 4 + 8 + 4 + 4*8
)

// tableRowBytes is what the belief planner's policy table costs per row at
// the planner's peak: the row (policy.Node), its working copy while the
// table is built, and the child index (two int32 per row).
const tableRowBytes = 2*int64(unsafe.Sizeof(policy.Node{})) + 8

// minTableRows is the least row budget a memory limit lowers the table to
// (a table of a handful of rows would make the policy nearly all
// fallback); the note then says the limit cut the table.
const minTableRows = 10_000

// heldBytes is what a fit of d holds in memory besides the policy table
// (the figure the --memory-limit budget is checked against); spilled: d's
// step arrays are in a spill file, not on the heap.
func heldBytes(d *ingest.Dataset, spilled bool) int64 {
	n := int64(len(d.Obs))
	b := n * stepBytes
	if spilled {
		b = n * heapStepBytes
	} else if d.Propensity != nil {
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
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return limit * 100 / (100 + 100) // the runtime's default
	}
	gc := int64(s[0].Value.Uint64())
	if gc <= 0 {
		return limit // off (reported as 0): collections at the limit only
	}
	return limit * 100 / (100 + gc)
}

// fitMemory is the memory the estimate stage may plan for under the run's
// limit: the live budget less what the logs hold (at least a quarter of
// the budget, which a fit of a small model needs anyway); −1 (no check)
// when the run has no limit.
func fitMemory(d *ingest.Dataset, spilled bool, limit int64) int64 {
	if limit <= 0 {
		return -1
	}
	live := liveBudget(limit)
	return max(live-heldBytes(d, spilled), live/4)
}

// tableRows is the belief planner's row budget under the memory limit:
// rows, or fewer when the table would not fit beside what the fit holds
// (with a note saying so). limit 0 is no limit; spilled as for heldBytes.
func tableRows(rows int64, d *ingest.Dataset, spilled bool, limit int64) (int64, string) {
	if limit <= 0 {
		return rows, ""
	}
	// Half of what the logs leave: the model, the bonus, the planner's
	// value vectors and its working copies of the table need the rest.
	free := (liveBudget(limit) - heldBytes(d, spilled)) / 2
	fit := max(free/tableRowBytes, minTableRows)
	if fit >= rows {
		return rows, ""
	}
	return fit, fmt.Sprintf("--memory-limit %s: the belief planner's policy table was limited to %d rows (not %d), which with the %s the logs take fit the limit; the controller decides the histories past it either way, and a larger table values more of them exactly (fewer rollouts).",
		memlimit.Format(limit), fit, rows, memlimit.Format(heldBytes(d, spilled)))
}

// boundMemory is the bytes the final plan's upper bound may hold while it
// deepens (policy.PlanOptions.BoundMemory) under the memory limit: what
// half of the live budget left by the logs leaves beside a table of rows,
// when that is less than policy.DefaultBoundMemory (0, the default,
// otherwise or with no limit), at least a byte; and the note that says
// so when it held the gap above policy.TargetGap (pipeline.plan).
func boundMemory(d *ingest.Dataset, spilled bool, limit, rows int64) (int64, string) {
	if limit <= 0 {
		return 0, ""
	}
	free := (liveBudget(limit)-heldBytes(d, spilled))/2 - rows*tableRowBytes
	if free >= policy.DefaultBoundMemory {
		return 0, ""
	}
	free = max(free, 1)
	return free, fmt.Sprintf("--memory-limit %s: the upper bound on the plan's gap was held to %s (not %s) while it deepened, beside the %s the logs take; a larger limit may state a smaller gap (the policy is the same).",
		memlimit.Format(limit), memlimit.Format(free), memlimit.Format(policy.DefaultBoundMemory), memlimit.Format(heldBytes(d, spilled)))
}

// spillStepBytes is what a logged step takes in the spill file: two
// uint16 codes, the reward and the propensity (float64 each).
const spillStepBytes = 2 + 2 + 8 + 8

// heapStepBytes is what a step still takes on the heap when the step
// arrays are spilled: the EM's reward code and the report's bonus term.
const heapStepBytes = stepBytes - (2 + 2 + 8)

// spillTrimEvery is how often the spill file's pages are given back (see
// spill.Arena.StartTrimming): a second of passes over the steps stays
// resident, the rest is in the page cache or on disk.
const spillTrimEvery = time.Second

// planInputMemory checks the logs against the memory limit before they
// are read, from the row counts of the files' footers, and decides where
// the step arrays go:
//
//   - when the steps' compact codes fit in half the live budget, on the
//     heap (the other half is for the policy table, the per-episode
//     figures and the stages' work);
//   - otherwise in a spill file in o.SpillDir (spill.Arena): every stage
//     reads them from there, through the page cache, and the process
//     keeps only what it read in the last second;
//   - when even the heap's part of each step exceeds the budget, the run
//     is refused before anything is read (checkSpilledMemory): the
//     figure counts the steps only, a lower bound of what the fit needs,
//     so a refusal is certain to be needed.
//
// Files whose footers cannot be listed are left to the reader, which
// reports them with its own messages.
func planInputMemory(inputs []string, o Options) (*spillArrays, error) {
	groups, err := ingest.ListRowGroups(inputs, o.Ingest)
	if err != nil {
		return nil, nil
	}
	var rows int64
	for _, g := range groups {
		rows += g.Rows
	}
	held := int64(stepBytes)
	if len(groups) > 0 && groups[0].Propensity {
		held += stepPropensityBytes
	}
	if rows*held <= liveBudget(o.MemoryLimit)/2 {
		return nil, nil
	}
	if err := checkSpilledMemory(rows, o.MemoryLimit); err != nil {
		return nil, err
	}
	return &spillArrays{dir: o.SpillDir}, nil
}

// checkSpilledMemory refuses logs whose steps' heap part (what stays in
// memory when their codes are spilled) exceeds the live budget.
func checkSpilledMemory(rows, limit int64) error {
	need := rows * heapStepBytes
	if need > liveBudget(limit) {
		return fmt.Errorf("%w: the logs' %d rows need at least %s of memory besides the spilled step codes, more than --memory-limit %s allows (%s of live data); raise --memory-limit, fit a sample of the episodes, or run the E-step on a cluster with psrlcb-beam (docs/scale-out.md)",
			ErrOptions, rows, memlimit.Format(need), memlimit.Format(limit), memlimit.Format(liveBudget(limit)))
	}
	return nil
}

// spillArrays is ingest.Arrays on a spill file made at the first request,
// sized for the step arrays of that many cells (two uint16 and two
// float64 arrays; the file is sparse, so an unused propensity array costs
// no disk).
type spillArrays struct {
	dir   string
	arena *spill.Arena
}

func (s *spillArrays) ensure(n int) error {
	if s.arena != nil {
		return nil
	}
	a, err := spill.New(s.dir, int64(n)*spillStepBytes+64)
	if err != nil {
		return err
	}
	a.StartTrimming(spillTrimEvery)
	s.arena = a
	return nil
}

func (s *spillArrays) Uint16s(n int) ([]uint16, error) {
	if err := s.ensure(n); err != nil {
		return nil, err
	}
	return s.arena.Uint16s(n)
}

func (s *spillArrays) Float64s(n int) ([]float64, error) {
	if err := s.ensure(n); err != nil {
		return nil, err
	}
	return s.arena.Float64s(n)
}

// Close unmaps the spill file (the dataset's step arrays are invalid
// afterwards).
func (s *spillArrays) Close() error {
	if s == nil || s.arena == nil {
		return nil
	}
	return s.arena.Close()
}

// spillNote says where the step arrays were kept, for the manifest.
func spillNote(s *spillArrays, limit int64) string {
	if s == nil || s.arena == nil {
		return ""
	}
	dir := s.spillDir()
	n := fmt.Sprintf("--memory-limit %s: the logs' step codes (%s) were kept in a spill file in %s and read from there at every pass, not held in memory.",
		memlimit.Format(limit), memlimit.Format(int64(s.arena.Size())), dir)
	if spill.InMemoryFS(dir) {
		n += " That directory is on a file system held in memory (tmpfs), so the spill saved no memory: give --spill-dir a directory on local disk."
	}
	return n
}

// spillDir is the directory of the spill file (the system's temporary
// directory unless --spill-dir named one).
func (s *spillArrays) spillDir() string {
	if s.dir == "" {
		return os.TempDir()
	}
	return s.dir
}
