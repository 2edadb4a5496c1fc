package report

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/psrlcb/psrlcb/arrowio"

	"strconv"

	"github.com/psrlcb/psrlcb/policy"
)

// File names inside a run directory.
const (
	PolicyFile   = "policy.arrow"
	ModelFile    = "model.arrow"
	CoverageFile = "coverage.arrow"
	EpisodesFile = "episodes.arrow"
	FitFile      = "fit.arrow"
	AlphaFile    = "alpha.arrow"
	ManifestFile = "manifest.json"
	HTMLFile     = "report.html"
	// ControllerFile is the belief planner's policy for every history
	// (policy.Controller); written when the policy has one.
	ControllerFile = policy.ControllerFileName
)

// OutputFiles are the names WriteOutcome writes into a run directory
// (ComparedFile only for a run with policies to compare, ControllerFile
// only for a policy of the belief planner).
func OutputFiles() []string {
	return []string{PolicyFile, ControllerFile, ModelFile, CoverageFile, EpisodesFile, FitFile, AlphaFile, ComparedFile, ManifestFile, HTMLFile}
}

// meta is the schema metadata every table carries.
func (r *Run) meta(table string) map[string]string {
	return map[string]string{"psrlcb.run_id": r.RunID, "psrlcb.table": table}
}

// WriteTables writes coverage, episodes, fit, alpha and model tables, the
// manifest and report.html into dir (the staging directory of an OutDir).
// policy.arrow is written by the policy package.
func WriteTables(dir string, run *Run) error {
	tables := map[string]Table{
		CoverageFile: run.coverageTable(),
		EpisodesFile: run.episodesTable(),
		FitFile:      run.fitTable(),
		AlphaFile:    run.alphaTable(),
	}
	if len(run.Manifest.Compared) > 0 {
		tables[ComparedFile] = run.comparedTable()
	}
	for _, name := range sortedKeys(tables) {
		if err := arrowio.WriteArrow(filepath.Join(dir, name), tables[name]); err != nil {
			return err
		}
	}
	if err := run.Model.Write(filepath.Join(dir, ModelFile), run.meta("model")); err != nil {
		return err
	}
	if err := WriteManifest(filepath.Join(dir, ManifestFile), &run.Manifest); err != nil {
		return err
	}
	return WriteHTML(filepath.Join(dir, HTMLFile), run)
}

func (r *Run) coverageTable() Table {
	n := len(r.Coverage)
	step := make([]int32, n)
	logged := make([]int64, n)
	iota := make([]float64, n)
	mass := make([]float64, n)
	cinf := make([]float64, n)
	nodes := make([]int64, n)
	follow := make([]int64, n)
	for i, c := range r.Coverage {
		nodes[i], follow[i] = c.PolicyNodes, c.FollowingEpisodes
		step[i], logged[i], iota[i], mass[i], cinf[i] = c.Step, c.LoggedHistories, c.Iota, c.CoveredMass, c.CInf
	}
	return Table{Meta: r.meta("coverage"), Columns: []Column{
		{Name: "step", Int32: step},
		{Name: "logged_histories", Int64: logged},
		{Name: "iota", Float64: iota},
		{Name: "covered_mass", Float64: mass},
		{Name: "c_inf", Float64: cinf},
		{Name: "policy_nodes", Int64: nodes},
		{Name: "following_episodes", Int64: follow},
	}}
}

func (r *Run) episodesTable() Table {
	e := r.Episodes
	if e.RewardLogLik == nil { // a Run built without the reward split
		e.RewardLogLik = make([]float64, len(e.ID))
		for k := range e.RewardLogLik {
			e.RewardLogLik[k] = math.NaN()
		}
	}
	return Table{Meta: r.meta("episodes"), Columns: []Column{
		{Name: "episode_id", String: arrowio.OrEmpty(e.ID)},
		{Name: "split", Int32: arrowio.OrEmpty(e.Split)},
		{Name: "loglik", Float64: arrowio.OrEmpty(e.LogLik)},
		{Name: "reward_loglik", Float64: arrowio.OrEmpty(e.RewardLogLik)},
		{Name: "bonus", Float64: arrowio.OrEmpty(e.Bonus)},
		{Name: "weight", Float64: arrowio.OrEmpty(e.Weight)},
	}}
}

// fitTable holds the EM trace (kind "trace") and the rank-selection table
// (kind "rank") in one long table.
func (r *Run) fitTable() Table {
	var t fitColumns
	nan := math.NaN()
	for _, x := range r.Trace {
		t.add(fitRow{"trace", x.Rank, x.Restart, x.Iter, x.LogLik, nan, false, nan, nan, "", -1, -1})
	}
	for _, k := range r.Ranks {
		t.add(fitRow{"rank", k.Rank, -1, -1, k.TrainLL, k.HeldOutL, k.Chosen, nan, nan, k.Form, k.Episodes, k.HeldOutEpisodes})
	}
	if rc := r.Manifest.RewardCheck; rc != nil {
		// One "reward_check" row: the per-episode log-likelihood of the
		// checked episodes split into observation and reward parts.
		tot := float64(rc.ObsLogLik + rc.RewardLogLik)
		held := nan
		if rc.HeldOut {
			held = tot
		}
		t.add(fitRow{"reward_check", r.Manifest.Headline.Rank, -1, -1, tot, held, true, float64(rc.ObsLogLik), float64(rc.RewardLogLik), "", -1, -1})
	}
	return Table{Meta: r.meta("fit"), Columns: []Column{
		{Name: "kind", String: arrowio.OrEmpty(t.kind)},
		{Name: "rank", Int32: arrowio.OrEmpty(t.rank)},
		{Name: "restart", Int32: arrowio.OrEmpty(t.restart)},
		{Name: "iteration", Int32: arrowio.OrEmpty(t.iter)},
		{Name: "loglik", Float64: arrowio.OrEmpty(t.ll)},
		{Name: "heldout_loglik", Float64: arrowio.OrEmpty(t.held)},
		{Name: "chosen", Bool: arrowio.OrEmpty(t.chosen)},
		{Name: "obs_loglik", Float64: arrowio.OrEmpty(t.obsLL)},
		{Name: "reward_loglik", Float64: arrowio.OrEmpty(t.rewLL)},
		{Name: "form", String: arrowio.OrEmpty(t.form)},
		{Name: "episodes", Int32: arrowio.OrEmpty(t.episodes)},
		{Name: "heldout_episodes", Int32: arrowio.OrEmpty(t.heldEps)},
	}}
}

// fitRow is one row of fit.arrow: an EM iteration ("trace"), a rank of
// the search ("rank") or the reward check ("reward_check"). The model
// form and the training and held-out episodes are a rank row's ("", −1
// and −1 on the others).
type fitRow struct {
	kind                 string
	rank, restart, iter  int
	ll, held             float64
	chosen               bool
	obsLogLik, rewLogLik float64
	form                 string
	episodes, heldEps    int
}

// fitColumns are fit.arrow's columns.
type fitColumns struct {
	kind, form                             []string
	rank, restart, iter, episodes, heldEps []int32
	ll, held, obsLL, rewLL                 []float64
	chosen                                 []bool
}

// add appends row x.
func (t *fitColumns) add(x fitRow) {
	t.kind = append(t.kind, x.kind)
	t.rank, t.restart, t.iter = append(t.rank, int32(x.rank)), append(t.restart, int32(x.restart)), append(t.iter, int32(x.iter))
	t.ll, t.held, t.chosen = append(t.ll, x.ll), append(t.held, x.held), append(t.chosen, x.chosen)
	t.obsLL, t.rewLL = append(t.obsLL, x.obsLogLik), append(t.rewLL, x.rewLogLik)
	t.form, t.episodes, t.heldEps = append(t.form, x.form), append(t.episodes, int32(x.episodes)), append(t.heldEps, int32(x.heldEps))
}

func (r *Run) alphaTable() Table {
	n := len(r.Alphas)
	col := func(f func(AlphaRow) float64) []float64 { return alphaColumn(r.Alphas, f) }
	chosen, sat := make([]bool, n), make([]bool, n)
	for i, a := range r.Alphas {
		chosen[i], sat[i] = a.Chosen, a.Saturated
	}
	return Table{Meta: r.meta("alpha"), Columns: []Column{
		{Name: "alpha", Float64: col(func(a AlphaRow) float64 { return a.Alpha })},
		{Name: "value_reward", Float64: col(func(a AlphaRow) float64 { return a.ValueReward })},
		{Name: "value_bonus", Float64: col(func(a AlphaRow) float64 { return a.ValueBonus })},
		{Name: "lcb", Float64: col(func(a AlphaRow) float64 { return a.LCB })},
		{Name: "iw_value", Float64: col(func(a AlphaRow) float64 { return a.IW })},
		{Name: "iw_low", Float64: col(func(a AlphaRow) float64 { return a.IWLo })},
		{Name: "iw_high", Float64: col(func(a AlphaRow) float64 { return a.IWHi })},
		{Name: "ess", Float64: col(func(a AlphaRow) float64 { return a.ESS })},
		{Name: "c_inf", Float64: col(func(a AlphaRow) float64 { return a.CInf })},
		{Name: "cross_value_reward", Float64: col(func(a AlphaRow) float64 { return a.CrossReward })},
		{Name: "cross_value_bonus", Float64: col(func(a AlphaRow) float64 { return a.CrossBonus })},
		{Name: "cross_lcb", Float64: col(func(a AlphaRow) float64 { return a.CrossLCB })},
		{Name: "criterion", Float64: col(func(a AlphaRow) float64 { return a.Criterion })},
		{Name: "cross_stderr", Float64: col(func(a AlphaRow) float64 { return a.CrossSE })},
		{Name: "saturated", Bool: sat},
		{Name: "chosen", Bool: chosen},
	}}
}

// alphaColumn is one float column of alpha.arrow: f of every row.
func alphaColumn(rows []AlphaRow, f func(AlphaRow) float64) []float64 {
	v := make([]float64, len(rows))
	for i, a := range rows {
		v[i] = f(a)
	}
	return v
}

// WriteManifest writes manifest.json (indented, non-finite numbers as
// null so every JSON reader accepts it).
func WriteManifest(path string, m *Manifest) error {
	b, err := marshalFinite(m)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, append(b, '\n'))
}

// ReadManifest reads a run directory's manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	b, err := os.ReadFile(filepath.Join(dir, ManifestFile))
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return &m, nil
}

// hashFile returns the size and SHA-256 of a file; it stops when ctx is
// cancelled.
func hashFile(ctx context.Context, path string) (InputFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return InputFile{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, ctxReader{ctx, f})
	if err != nil {
		return InputFile{}, err
	}
	return InputFile{Path: path, Bytes: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// ctxReader is a reader that fails once ctx is cancelled.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Float is a float64 that encodes NaN and ±Inf as JSON null (encoding/json
// refuses them) and decodes null back as NaN.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, x, 'g', -1, 64), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	x, err := strconv.ParseFloat(string(b), 64)
	*f = Float(x)
	return err
}

// Format implements fmt.Formatter: a non-finite value prints as "n/a"
// (not available), so no printed figure reads NaN or +Inf; finite values
// print as float64 does with the same verb, width and precision.
func (f Float) Format(s fmt.State, verb rune) {
	x := float64(f)
	if math.IsNaN(x) || math.IsInf(x, 0) {
		w, _ := s.Width()
		fmt.Fprintf(s, "%*s", w, "n/a")
		return
	}
	fmt.Fprintf(s, fmt.FormatString(s, verb), x)
}

// Schema metadata of policy.arrow: the α its value_bonus and value_lcb
// columns are priced at, and the α of the run's reported lower bound.
const (
	MetaValuesAlpha = "psrlcb.values_alpha"
	MetaBoundAlpha  = "psrlcb.bound_alpha"
)

// WriteOutcome writes a whole run into dir: policy.arrow and every table
// of WriteTables.
func WriteOutcome(dir string, out *Outcome) error {
	meta := map[string]string{"psrlcb.run_id": out.Run.RunID, "psrlcb.table": "policy",
		// The nodes' value_bonus and value_lcb are priced at the planning
		// α; the run's reported lower bound at bound_alpha.
		MetaValuesAlpha: strconv.FormatFloat(out.Alpha, 'g', -1, 64),
		MetaBoundAlpha:  strconv.FormatFloat(boundAlpha(out), 'g', -1, 64)}
	if err := policy.WriteFile(filepath.Join(dir, PolicyFile), out.Policy, meta); err != nil {
		return err
	}
	if c := out.Policy.Ctrl; c != nil {
		cm := map[string]string{"psrlcb.run_id": out.Run.RunID, "psrlcb.table": "controller", MetaValuesAlpha: meta[MetaValuesAlpha]}
		if err := policy.WriteController(filepath.Join(dir, ControllerFile), c, cm); err != nil {
			return err
		}
	}
	return WriteTables(dir, out.Run)
}
