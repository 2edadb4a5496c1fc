package main

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"time"

	"github.com/psrlcb/psrlcb/internal/jsonfloat"

	"github.com/psrlcb/psrlcb/baseline"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/internal/genpomdp"
	"github.com/psrlcb/psrlcb/pipeline"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
	"github.com/psrlcb/psrlcb/report"
)

// Behaviors are the two behaviour policies: wide and narrow coverage.
var Behaviors = []string{"uniform", "myopic:0.1"}

// Config is one study.
type Config struct {
	Families []string
	Small    bool // the reduced families (at most 9 states)
	Problems int  // problems per family
	Horizons []int
	Behavs   []string
	Ks       []int
	Seed     uint64 // draws the problems
	Restarts int
	MaxIter  int
	AutoRank bool // rank by held-out likelihood as fit does by default (--rank auto) instead of the true |S|
	Workers  int
	Estimate estimate.Options // extra estimate options (a candidate fix); Rank, Restarts, MaxIter are set from the fields above
	Label    string           // names the estimate variant in the checkpoint fingerprint
	Log      func(format string, args ...any)
	// MaxNodes is the budget of the exact references: a (problem, H)
	// whose optimal value or behaviour value needs more (step, belief)
	// nodes, or a run whose policies reach more than EvalNodesFactor·MaxNodes
	// histories, is skipped (Row.Skipped) rather than valued approximately.
	// 0: no budget.
	MaxNodes int
}

// EvalNodesFactor: valuing a policy under the true model visits each
// history it reaches (no belief merging), so its budget is this multiple
// of MaxNodes.
const EvalNodesFactor = 10

// Row is one configuration's results. Values are exact expected returns
// under the true model, in reward units; regrets are normalized,
// (V* − V)/(V* − V^b).
type Row struct {
	Family   string `json:"family"`
	Problem  int    `json:"problem"`
	Horizon  int    `json:"horizon"`
	Behavior string `json:"behavior"`
	K        int    `json:"k"`
	States   int    `json:"states"`
	Actions  int    `json:"actions"`
	Obs      int    `json:"obs"`
	Rank     int    `json:"rank"`

	Optimal   jfloat `json:"optimal"` // V*
	Behav     jfloat `json:"behav"`   // V^b
	PSRLCB    jfloat `json:"psrlcb"`  // V^π̄, α chosen (auto)
	Greedy    jfloat `json:"greedy"`  // V^π_g, same model, α = 0
	Tabular   jfloat `json:"tabular"` // baseline.TabularLCB
	Alpha     jfloat `json:"alpha"`   // α chosen
	PlanExact bool   `json:"plan_exact"`

	// The loss decomposition, in reward units (see doc.go):
	// V* − V^π̄ = EstErr + PlanGap + GreedyOver + BonusLoss.
	ModelOfOptimal jfloat `json:"model_of_optimal"` // V_θ̂(π*)
	ModelOfGreedy  jfloat `json:"model_of_greedy"`  // V_θ̂(π_g), the model's own optimum when the plan is exact
	ModelOfPSRLCB  jfloat `json:"model_of_psrlcb"`  // V_θ̂(π̄)

	// Reward diagnostics: the largest per-(state, action) expected reward
	// of the true model and of θ̂ (user units), and the per-episode
	// observation and reward log-likelihoods of θ̂ and of the truth.
	TrueMaxReward  jfloat `json:"true_max_reward"`
	ModelMaxReward jfloat `json:"model_max_reward"`

	// The run's reward check (report.RewardCheck): whether the verdict
	// flagged miscalibrated rewards, the share of checked steps in
	// miscalibrated cells, and the held-out reward log-likelihood per
	// episode. Null in rows checkpointed before the check existed.
	RewardFlagged *bool  `json:"reward_flagged"`
	MiscalShare   jfloat `json:"miscal_share"`
	RewardLogLik  jfloat `json:"reward_loglik"`

	// Clone says whether the run returned the behaviour's clone (the
	// behaviour fallback, pipeline/fallback.go) instead of the plan. Null
	// in rows checkpointed before it was recorded.
	Clone *bool `json:"clone"`

	FitSeconds jfloat `json:"fit_seconds"`

	// Skipped says why the configuration has no figures (an exact
	// reference beyond Config.MaxNodes); "" for a measured run. Skipped
	// rows are checkpointed, so a resumed study does not try them again,
	// and left out of every table.
	Skipped string `json:"skipped,omitempty"`
}

func (r Row) key() key { return key{r.Family, r.Problem, r.Horizon, r.Behavior, r.K} }

type key struct {
	Family     string
	Problem, H int
	Behavior   string
	K          int
}

// jfloat is a float64 that encodes NaN as JSON null (for the checkpoint).
type jfloat = jsonfloat.Float

// Regret of a value: (V* − v)/(V* − V^b), NaN when V* = V^b.
func (r Row) Regret(v jfloat) float64 {
	gap := float64(r.Optimal - r.Behav)
	if gap <= 1e-9 {
		return math.NaN()
	}
	return float64(r.Optimal-v) / gap
}

// Decomposition terms, normalized by V* − V^b.
func (r Row) EstErr() float64     { return r.norm(r.Optimal - r.ModelOfOptimal) }
func (r Row) PlanGap() float64    { return r.norm(r.ModelOfOptimal - r.ModelOfGreedy) }
func (r Row) GreedyOver() float64 { return r.norm(r.ModelOfGreedy - r.Greedy) }
func (r Row) BonusLoss() float64  { return r.norm(r.Greedy - r.PSRLCB) }

func (r Row) norm(x jfloat) float64 {
	gap := float64(r.Optimal - r.Behav)
	if gap <= 1e-9 {
		return math.NaN()
	}
	return float64(x) / gap
}

// problem is one generated POMDP with its exact references at one horizon.
type problem struct {
	family string
	index  int
	m      *pomdp.POMDP
	optVal float64
	opt    pomdp.PolicyFunc
	optTab *policy.Policy
}

func loadProblem(ctx context.Context, cfg Config, family string, i, H int) (*problem, error) {
	m, err := drawProblem(cfg, family, i)
	if err != nil {
		return nil, err
	}
	p := &problem{family: family, index: i, m: m}
	if p.optVal, p.opt, err = pomdp.OptimalWithin(ctx, m, H, cfg.MaxNodes); err != nil {
		return nil, err
	}
	p.optTab, err = policyTable(ctx, m, H, p.opt)
	return p, err
}

// policyTable writes a deterministic policy as a policy tree over the
// observation histories it reaches with positive probability under m (the
// observation names, InitSymbol at step 1), so that it can be valued under
// a fitted model with policy.ModelReturn. Each node's fallback is its own
// action.
func policyTable(ctx context.Context, m *pomdp.POMDP, H int, pf pomdp.PolicyFunc) (*policy.Policy, error) {
	w := &treeWriter{m: m, H: H, pf: pf, pol: &policy.Policy{Horizon: H}, obs: []int{pomdp.ObsInit}}
	return w.pol, w.rec(ctx, -1, append([]float64(nil), m.Start...))
}

// treeWriter walks the observation histories a deterministic policy pf
// reaches under m, writing a node of pol for each; obs and act are the
// history of the node being written.
type treeWriter struct {
	m        *pomdp.POMDP
	H        int
	pf       pomdp.PolicyFunc
	pol      *policy.Policy
	obs, act []int
}

// rec writes the node of the current history, a child of parent, with
// belief b, then the subtree of every observation possible after it.
func (w *treeWriter) rec(ctx context.Context, parent int64, b []float64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	a := w.pf(w.obs, w.act)
	id := w.addNode(parent, a)
	if len(w.obs) == w.H {
		return nil
	}
	pred := predict(w.m, b, a)
	w.act = append(w.act, a)
	if err := w.children(ctx, id, pred, a); err != nil {
		return err
	}
	w.act = w.act[:len(w.act)-1]
	return nil
}

// children writes the subtrees below node id, which took action a: one
// for each observation with a posterior from the predicted next-state
// distribution pred.
func (w *treeWriter) children(ctx context.Context, id int64, pred []float64, a int) error {
	for o := range w.m.NumObs() {
		post := posterior(w.m, pred, a, o)
		if post == nil {
			continue
		}
		w.obs = append(w.obs, o)
		if err := w.rec(ctx, id, post); err != nil {
			return err
		}
		w.obs = w.obs[:len(w.obs)-1]
	}
	return nil
}

// addNode writes the node of the current history, a child of parent,
// taking action a (its fallback too), and returns its id.
func (w *treeWriter) addNode(parent int64, a int) int64 {
	h := len(w.obs)
	id := int64(len(w.pol.Nodes))
	name := w.m.ObsName(w.obs[h-1])
	w.pol.Nodes = append(w.pol.Nodes, policy.Node{ID: id, Parent: parent, Step: int32(h), Obs: name,
		Action: w.m.Actions[a], Fallback: w.m.Actions[a]})
	return id
}

// predict is the distribution of the next state from belief b after
// action a.
func predict(m *pomdp.POMDP, b []float64, a int) []float64 {
	S := m.NumStates()
	pred := make([]float64, S)
	for s, bs := range b {
		for s2 := range S {
			pred[s2] += bs * m.T[a][s][s2]
		}
	}
	return pred
}

// posterior is the belief after action a and observation o given the
// predicted next-state distribution pred; nil when o is impossible.
func posterior(m *pomdp.POMDP, pred []float64, a, o int) []float64 {
	S := m.NumStates()
	post := make([]float64, S)
	z := 0.0
	for s2 := range S {
		post[s2] = pred[s2] * m.O[a][s2][o]
		z += post[s2]
	}
	if z == 0 {
		return nil
	}
	for s2 := range post {
		post[s2] /= z
	}
	return post
}

// seedFor derives the simulation and fit seed of a configuration.
func seedFor(k key, base uint64) uint64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d|%s|%d|%d|%s|%d", base, k.Family, k.Problem, k.H, k.Behavior, k.K)
	return h.Sum64()
}

// fitOptions: the fit defaults (α auto, λ = 1, stationary dynamics) with the
// EM search cut to the study's budget; the rank is the true |S| unless
// AutoRank.
func fitOptions(cfg Config, S int, seed uint64) pipeline.Options {
	eo := cfg.Estimate
	eo.Restarts, eo.MaxIter = cfg.Restarts, cfg.MaxIter
	eo.Rank = S
	if cfg.AutoRank {
		eo.Rank = 0
	}
	return pipeline.Options{Estimate: eo, Seed: seed, Workers: cfg.Workers}
}

// drawProblem draws problem i of the family with genpomdp and parses its
// generated file.
func drawProblem(cfg Config, family string, i int) (*pomdp.POMDP, error) {
	sp, err := genpomdp.Draw(family, cfg.Small, cfg.Seed, i)
	if err != nil {
		return nil, err
	}
	g, err := genpomdp.Generate(sp)
	if err != nil {
		return nil, err
	}
	return pomdp.Parse(strings.NewReader(g.Text), fmt.Sprintf("%s-%d", family, i))
}

// runOne fits PSR-LCB on the logs of configuration k of problem p and
// values its policy, the greedy plan and the tabular LCB exactly, with the
// terms of the loss decomposition and the run's diagnostics.
func runOne(ctx context.Context, cfg Config, p *problem, k key) (Row, error) {
	m := p.m
	r := Row{Family: k.Family, Problem: k.Problem, Horizon: k.H, Behavior: k.Behavior, K: k.K,
		States: m.NumStates(), Actions: m.NumActions(), Obs: m.NumObs(), Optimal: jfloat(p.optVal)}
	beh, vb, err := behaviorValue(ctx, cfg, m, k)
	if err != nil {
		return r, err
	}
	r.Behav = jfloat(vb)
	d, out, err := r.fit(ctx, cfg, m, k, beh)
	if err != nil {
		return r, err
	}
	if err := r.valuePolicies(ctx, cfg, p, k.H, d, out); err != nil {
		return r, err
	}
	r.recordRun(m, out)
	return r, nil
}

// fit draws the configuration's logs under beh and fits PSR-LCB on them,
// recording the fit's time, rank and α and whether its plan is exact.
func (r *Row) fit(ctx context.Context, cfg Config, m *pomdp.POMDP, k key, beh pomdp.Behavior) (*ingest.Dataset, *report.Outcome, error) {
	seed := seedFor(k, cfg.Seed)
	d, err := pomdp.SimulateDataset(ctx, m, k.H, k.K, beh, seed)
	if err != nil {
		return nil, nil, err
	}
	start := time.Now()
	out, err := pipeline.Fit(ctx, d, nil, fitOptions(cfg, m.NumStates(), seed))
	if err != nil {
		return nil, nil, fmt.Errorf("fit: %w", err)
	}
	r.FitSeconds = jfloat(time.Since(start).Seconds())
	r.Rank, r.Alpha, r.PlanExact = out.Model.States, jfloat(out.Alpha), out.Plan.Exact
	return d, out, nil
}

// valuePolicies plans greedily (α = 0 on the fit's model and bonus) and
// trains the tabular LCB, then values PSR-LCB's policy, the greedy plan
// and the tabular LCB under the true model and PSR-LCB's, the greedy and
// the true optimal policy under the fitted model.
func (r *Row) valuePolicies(ctx context.Context, cfg Config, p *problem, H int, d *ingest.Dataset, out *report.Outcome) error {
	gpol, _, err := policy.Plan(ctx, out.Model, out.Bonus.WithAlpha(0), policy.PlanOptions{Workers: cfg.Workers})
	if err != nil {
		return fmt.Errorf("greedy plan: %w", err)
	}
	tab, err := baseline.TabularLCB(ctx, d, baseline.TabularOptions{})
	if err != nil {
		return fmt.Errorf("tabular: %w", err)
	}
	for _, v := range []valued{{out.Policy, &r.PSRLCB, &r.ModelOfPSRLCB}, {gpol, &r.Greedy, &r.ModelOfGreedy}, {tab, &r.Tabular, nil}, {p.optTab, nil, &r.ModelOfOptimal}} {
		if err := v.value(ctx, p.m, H, EvalNodesFactor*cfg.MaxNodes, out.Model); err != nil {
			return err
		}
	}
	return nil
}

// valued is a policy and where its values go: its exact value under the
// true model and its value under the fitted model (nil: not wanted).
type valued struct {
	pol  *policy.Policy
	true *jfloat
	mod  *jfloat
}

// value computes the wanted values of v.pol: under m at horizon H within
// maxNodes histories, and under the fitted model.
func (v valued) value(ctx context.Context, m *pomdp.POMDP, H, maxNodes int, model *estimate.Model) error {
	if v.true != nil {
		x, err := pomdp.EvaluatePolicyWithin(ctx, m, H, v.pol, maxNodes)
		if err != nil {
			return err
		}
		*v.true = jfloat(x)
	}
	if v.mod != nil {
		x, _, err := policy.ModelReturn(ctx, model, v.pol)
		if err != nil {
			return err
		}
		*v.mod = jfloat(x)
	}
	return nil
}

// recordRun records the run's diagnostics: whether it returned the
// behaviour's clone, the largest expected rewards of the truth and of the
// fitted model, and the reward check.
func (r *Row) recordRun(m *pomdp.POMDP, out *report.Outcome) {
	if fb := out.Run.Manifest.Fallback; fb != nil {
		used := fb.Used
		r.Clone = &used
	}
	r.TrueMaxReward, r.ModelMaxReward = jfloat(trueMaxReward(m)), jfloat(modelMaxReward(out.Model))
	if rc := out.Run.Manifest.RewardCheck; rc != nil {
		f := rc.Calibration.Flagged
		r.RewardFlagged, r.MiscalShare, r.RewardLogLik = &f, jfloat(rc.Calibration.MiscalibratedShare), jfloat(rc.RewardLogLik)
	}
}

// trueMaxReward is the largest true expected reward of any action in any
// state.
func trueMaxReward(m *pomdp.POMDP) float64 {
	best := math.Inf(-1)
	for a := range m.NumActions() {
		for s := range m.NumStates() {
			best = math.Max(best, expectedReward(m, a, s))
		}
	}
	return best
}

// expectedReward is the true expected reward of action a in state s, over
// the next state and observation.
func expectedReward(m *pomdp.POMDP, a, s int) float64 {
	S, O := m.NumStates(), m.NumObs()
	e := 0.0
	for s2 := range S {
		for o := range O {
			e += m.T[a][s][s2] * m.O[a][s2][o] * m.R(a, s, s2, o)
		}
	}
	return e
}

func modelMaxReward(m *estimate.Model) float64 {
	best := math.Inf(-1)
	b := make([]float64, m.States)
	for h := 1; h <= m.Horizon; h++ {
		for s := range m.States {
			clear(b)
			b[s] = 1
			for a := range m.NumActions {
				best = math.Max(best, m.ExpectedReward(h, b, a))
			}
		}
	}
	return best
}

// Run runs every configuration that done does not hold, calling emit with
// each finished row, and returns all rows in study order.
func Run(ctx context.Context, cfg Config, done map[key]Row, emit func(Row) error) ([]Row, error) {
	var all []Row
	// Problems outermost, so that a study stopped early has every family
	// at the same depth.
	for i := range cfg.Problems {
		for _, fam := range cfg.Families {
			for _, H := range cfg.Horizons {
				rows, err := problemRows(ctx, cfg, key{Family: fam, Problem: i, H: H}, done, emit)
				all = append(all, rows...)
				if err != nil {
					return all, err
				}
			}
		}
	}
	return all, nil
}

// behaviorValue is configuration k's behaviour policy and its exact value
// over horizon k.H.
func behaviorValue(ctx context.Context, cfg Config, m *pomdp.POMDP, k key) (pomdp.Behavior, float64, error) {
	beh, err := pomdp.ParseBehavior(k.Behavior, m)
	if err != nil {
		return nil, 0, err
	}
	vb, err := pomdp.BehaviorValueWithin(ctx, m, k.H, beh, cfg.MaxNodes)
	return beh, vb, err
}

// problemRows runs every configuration (behaviour, K) of the problem and
// horizon of base that done does not hold, taking done's rows for the
// others; the problem is loaded once, when the first of them runs.
func problemRows(ctx context.Context, cfg Config, base key, done map[key]Row, emit func(Row) error) ([]Row, error) {
	lp := &lazyProblem{}
	var rows []Row
	for _, bs := range cfg.Behavs {
		for _, K := range cfg.Ks {
			k := base
			k.Behavior, k.K = bs, K
			r, err := rowOf(ctx, cfg, lp, k, done, emit)
			if err != nil {
				return rows, err
			}
			rows = append(rows, r)
		}
	}
	return rows, nil
}

// lazyProblem is the problem of one (family, index, H), loaded on first
// use and kept with its error (pomdp.ErrTooLarge when its exact references
// exceed the budget).
type lazyProblem struct {
	p      *problem
	err    error
	loaded bool
}

func (l *lazyProblem) get(ctx context.Context, cfg Config, k key) (*problem, error) {
	if !l.loaded {
		l.p, l.err = loadProblem(ctx, cfg, k.Family, k.Problem, k.H)
		l.loaded = true
	}
	return l.p, l.err
}

// rowOf is configuration k's row: done's when it holds one, else
// measured now.
func rowOf(ctx context.Context, cfg Config, lp *lazyProblem, k key, done map[key]Row, emit func(Row) error) (Row, error) {
	if r, ok := done[k]; ok {
		return r, nil
	}
	return measure(ctx, cfg, lp, k, emit)
}

// measure runs configuration k, or records it as skipped when an exact
// reference exceeds the budget, and emits and logs the row.
func measure(ctx context.Context, cfg Config, lp *lazyProblem, k key, emit func(Row) error) (Row, error) {
	if err := ctx.Err(); err != nil {
		return Row{}, err
	}
	start := time.Now()
	r, err := runOrSkip(ctx, cfg, lp, k)
	if err != nil {
		return r, fmt.Errorf("%v: %w", k, err)
	}
	return r, emitRow(cfg, k, r, start, emit)
}

// emitRow passes configuration k's row r to emit (when there is one) and
// logs its line, timed from start.
func emitRow(cfg Config, k key, r Row, start time.Time, emit func(Row) error) error {
	if emit != nil {
		if err := emit(r); err != nil {
			return err
		}
	}
	if cfg.Log != nil {
		logRow(cfg.Log, k, r, start)
	}
	return nil
}

// logRow logs configuration k's row r, started at start: why it was
// skipped, or its regrets, decomposition and largest rewards.
func logRow(log func(format string, args ...any), k key, r Row, start time.Time) {
	head := fmt.Sprintf("%-8s %3d H=%d %-10s K=%-6d", k.Family, k.Problem, k.H, k.Behavior, k.K)
	if r.Skipped != "" {
		log("%s skipped: %s", head, r.Skipped)
		return
	}
	log("%s S=%-2d %5.1fs regret psrlcb %6.3f greedy %6.3f tabular %6.3f | est %6.3f plan %6.3f over %6.3f bonus %6.3f | max r %.3g vs %.3g",
		head, r.States, time.Since(start).Seconds(), r.Regret(r.PSRLCB), r.Regret(r.Greedy), r.Regret(r.Tabular),
		r.EstErr(), r.PlanGap(), r.GreedyOver(), r.BonusLoss(), float64(r.ModelMaxReward), float64(r.TrueMaxReward))
}

// runOrSkip runs configuration k, or returns its row marked skipped when
// an exact reference exceeds the budget.
func runOrSkip(ctx context.Context, cfg Config, lp *lazyProblem, k key) (Row, error) {
	r := Row{Family: k.Family, Problem: k.Problem, Horizon: k.H, Behavior: k.Behavior, K: k.K}
	p, err := lp.get(ctx, cfg, k)
	if err == nil {
		r, err = runOne(ctx, cfg, p, k)
	}
	if errors.Is(err, pomdp.ErrTooLarge) {
		r.Skipped, err = err.Error(), nil
	}
	return r, err
}

// Measured splits rows into the measured runs and the number skipped.
func Measured(rows []Row) (measured []Row, skipped int) {
	for _, r := range rows {
		if r.Skipped != "" {
			skipped++
			continue
		}
		measured = append(measured, r)
	}
	return measured, skipped
}
