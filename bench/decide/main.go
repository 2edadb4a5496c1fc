// Command decide diagnoses fits that explain the observations but miss
// what decides the policy (docs/validation.md, "Decisions, not just
// observations"). For a benchmark POMDP, a horizon and a number of
// episodes it simulates logs and compares, on the same logs:
//
//	truth      the true model written in the fit's form (pomdp.TrueModel)
//	default    estimate.Fit at the given rank with the default starts
//	from-true  EM started from the true parameters (at the true rank)
//	start i    EM from one informed start of seed i, for i < --starts
//	search r   the automatic rank search's model (--ranks), with its table
//	perturbed  EM from the true parameters with every probability row
//	           mixed with a random one at weight --perturb (how far from
//	           the truth a start may begin and still reach its optimum)
//	grown      with --grow R: a fit of rank R with the default starts,
//	           then EM at the fit's rank from its states split in two
//	           (estimate.SplitStart, the rank search's warm start, probed
//	           for its saddle point) on all the episodes, where the rank
//	           search grows on its subsample; with --persistent the
//	           split's copies persist along the episode
//	           (estimate.PersistentSplitStart)
//	run        the model of a fit's run directory (--runs, one per seed:
//	           a path with %d for the seed), e.g. `psrlcb fit` at its
//	           defaults on the logs `psrlcb simulate --seed S` writes,
//	           which are the logs of seed S here
//	refined    with --refine TOL: EM from each run's model on all the
//	           episodes, run until its relative gain falls below TOL
//	           (up to 3000 E-steps): whether the fit's own stop left
//	           likelihood, or value, on the table
//
// For each model it prints the observation and reward log-likelihoods
// per episode (ln P(o|a) and ln P(r|o,a) of the logs), the joint one on
// as many fresh episodes (seed + 1000: held out), the normalized
// regret (V* − V^π)/(V* − V^b) of the model's greedy plan (α = 0, so
// neither α nor the bonus enters), the value the model gives the truly
// optimal policy, and that value's error as a share of V* − V^b.
// --form sets the model form of every fit (full, compact; default: the
// automatic choice); the truth's rows stay in the full form, and a start
// from the truth in the compact form takes each state's emission under
// the first action and each step's reward at the entered state's most
// likely observation: the same model when the problem's emissions ignore
// the action and its rewards the observation (tiger-grid).
// --random N tallies the final log-likelihoods of N pairs of starts (an
// informed and a random one each), to count how often EM reaches the
// best optimum.
//
// Usage:
//
//	go run ./bench/decide --pomdp ../shared/pomdp/stand-tiger.95.pomdp \
//	    --horizon 4 --episodes 10000 [--seeds 3] [--rank 0] [--starts 4] \
//	    [--ranks] [--random 25] [--points 500] [--runs 'run-%d' [--refine 1e-9]] [-v] \
//	    [--form compact] [--perturb 0.3,0.7] [--grow 16 [--persistent]]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
	"github.com/psrlcb/psrlcb/split"
)

type config struct {
	file, behavior, form string
	perturb              []float64
	grow                 int
	refine               float64
	persistent           bool
	H, K, seeds, starts  int
	rank, random, points int
	ranks, verbose       bool
	runs                 string
}

func main() {
	var c config
	flag.StringVar(&c.file, "pomdp", "", "benchmark POMDP file (Cassandra's format)")
	flag.IntVar(&c.H, "horizon", 4, "steps per episode")
	flag.IntVar(&c.K, "episodes", 10000, "episodes per log")
	flag.IntVar(&c.seeds, "seeds", 1, "logs to draw (seeds 1..N)")
	flag.IntVar(&c.starts, "starts", 4, "single informed starts to run")
	flag.IntVar(&c.rank, "rank", 0, "rank of the fits (0: the true number of states)")
	flag.StringVar(&c.behavior, "behavior", "uniform", "behaviour policy")
	flag.BoolVar(&c.ranks, "ranks", false, "run the automatic rank search and print its table")
	flag.StringVar(&c.runs, "runs", "", "run directories of fits of the same logs, %d for the seed (their model.arrow gets a row)")
	flag.IntVar(&c.random, "random", 0, "pairs of starts whose final log-likelihoods to tally")
	flag.IntVar(&c.points, "points", 0, "belief points of the plans (0: the planner's default)")
	flag.BoolVar(&c.verbose, "v", false, "print the parameters of the true and the default model")
	flag.StringVar(&c.form, "form", "", "model form of the fits: full or compact (default: automatic)")
	flag.Func("perturb", "weights w (comma-separated) of EM from the truth mixed with random rows at weight w", func(v string) error {
		for _, f := range strings.Split(v, ",") {
			w, err := strconv.ParseFloat(f, 64)
			if err != nil || w < 0 || w > 1 {
				return fmt.Errorf("weight %q is not in [0, 1]", f)
			}
			c.perturb = append(c.perturb, w)
		}
		return nil
	})
	flag.BoolVar(&c.persistent, "persistent", false, "with --grow: the split's copies persist along the episode (the rank search's retry of a lost doubling)")
	flag.Float64Var(&c.refine, "refine", 0, "with --runs: EM from each run's model on all episodes at this tolerance, one more row")
	flag.IntVar(&c.grow, "grow", 0, "rank of a fit whose split start then fits the fit's rank on all episodes")
	flag.Parse()
	if err := run(context.Background(), c); err != nil {
		fmt.Fprintln(os.Stderr, "decide:", err)
		os.Exit(1)
	}
}

// study holds one log and what every model is compared with.
type study struct {
	m        *pomdp.POMDP
	d        *ingest.Dataset
	heldOut  *ingest.Dataset // as many fresh episodes (seed + 1000)
	H        int
	vStar    float64
	vBehav   float64
	optimal  *policy.Policy // the true model's greedy plan: an optimal policy
	splits   [][]int
	workers  int
	points   int
	planNote string
	refine   float64
}

func run(ctx context.Context, c config) error {
	m, beh, err := loadProblem(c)
	if err != nil {
		return err
	}
	vStar, vb, err := references(ctx, m, c.H, beh)
	if err != nil {
		return err
	}
	rank := fitRank(c.rank, m)
	fmt.Printf("%s H=%d K=%d rank=%d behaviour %s: V*=%.4g V^b=%.4g\n", m.Name, c.H, c.K, rank, c.behavior, vStar, vb)
	for seed := 1; seed <= c.seeds; seed++ {
		if err := runSeed(ctx, c, m, beh, rank, uint64(seed), vStar, vb); err != nil {
			return err
		}
	}
	return nil
}

// references are the exact optimal value V* and the behaviour's value
// V^b at horizon H.
func references(ctx context.Context, m *pomdp.POMDP, H int, beh pomdp.Behavior) (vStar, vb float64, err error) {
	if vStar, _, err = pomdp.OptimalContext(ctx, m, H); err != nil {
		return 0, 0, err
	}
	vb, err = pomdp.BehaviorValueContext(ctx, m, H, beh)
	return vStar, vb, err
}

// loadProblem reads the POMDP file and the behaviour policy of c.
func loadProblem(c config) (*pomdp.POMDP, pomdp.Behavior, error) {
	m, err := pomdp.ParseFile(c.file)
	if err != nil {
		return nil, nil, err
	}
	beh, err := pomdp.ParseBehavior(c.behavior, m)
	return m, beh, err
}

// fitRank is the rank of the fits: rank, or the true number of states
// when it is 0.
func fitRank(rank int, m *pomdp.POMDP) int {
	if rank == 0 {
		return m.NumStates()
	}
	return rank
}

// runSeed draws the log of one seed and prints the row of every model
// compared on it (with the rank search's table and the tally of starts
// when asked for).
func runSeed(ctx context.Context, c config, m *pomdp.POMDP, beh pomdp.Behavior, rank int, seed uint64, vStar, vb float64) error {
	s, truth, err := newStudy(ctx, c, m, beh, seed, vStar, vb)
	if err != nil {
		return err
	}
	fmt.Printf("seed %d\n%-10s %10s %10s %10s %10s %8s %8s %8s  plan\n", seed, "model", "obs ll/ep", "rew ll/ep", "ll/ep", "held-out", "regret", "V_θ(π*)", "err(π*)")
	if err := s.truthRow(ctx, truth, c.verbose); err != nil {
		return err
	}
	fits, err := fitList(c, m, s.d, rank, seed)
	if err != nil {
		return err
	}
	if err := s.fits(ctx, fits, c.verbose); err != nil {
		return err
	}
	return s.extras(ctx, c, rank, seed)
}

// extras prints what c asks for beyond the models' rows: the rank
// search's table, the rows of earlier runs and the tally of random starts.
func (s *study) extras(ctx context.Context, c config, rank int, seed uint64) error {
	if c.grow > 0 {
		if err := s.grown(ctx, c, rank, seed); err != nil {
			return err
		}
	}
	if c.ranks {
		if err := s.rankSearch(ctx, c, seed); err != nil {
			return err
		}
	}
	if c.runs != "" {
		if err := s.runRow(ctx, fmt.Sprintf(c.runs, seed)); err != nil {
			return err
		}
	}
	if c.random > 0 {
		return tally(ctx, s.d, rank, c.random)
	}
	return nil
}

// truthRow prints the true model's row and, with verbose, its parameters
// (up to 8 states).
func (s *study) truthRow(ctx context.Context, truth *estimate.Model, verbose bool) error {
	if err := s.row(ctx, "truth", truth); err != nil {
		return err
	}
	if verbose && truth.States <= 8 {
		printModel(truth, "truth")
	}
	return nil
}

// newStudy draws the log of seed and returns the study of it with the
// true model in the fit's form, whose greedy plan is the optimal policy.
func newStudy(ctx context.Context, c config, m *pomdp.POMDP, beh pomdp.Behavior, seed uint64, vStar, vb float64) (*study, *estimate.Model, error) {
	d, err := pomdp.SimulateDataset(ctx, m, c.H, c.K, beh, seed)
	if err != nil {
		return nil, nil, err
	}
	splits, err := split.Split(c.K, c.H, seed)
	if err != nil {
		return nil, nil, err
	}
	held, err := pomdp.SimulateDataset(ctx, m, c.H, c.K, beh, seed+1000)
	if err != nil {
		return nil, nil, err
	}
	s := &study{m: m, d: d, heldOut: held, H: c.H, vStar: vStar, vBehav: vb, splits: splits, workers: runtime.GOMAXPROCS(0), points: c.points, refine: c.refine}
	truth, err := s.trueOptimal(ctx)
	if err != nil {
		return nil, nil, err
	}
	return s, truth, nil
}

// trueOptimal sets the study's optimal policy, the greedy plan of the true
// model, and returns that model in the fit's form.
func (s *study) trueOptimal(ctx context.Context) (*estimate.Model, error) {
	truth, err := s.m.TrueModel(s.d)
	if err != nil {
		return nil, err
	}
	if s.optimal, err = s.greedy(ctx, truth); err != nil {
		return nil, err
	}
	return truth, nil
}

// namedFit is one of the fits compared: its row's name and its options.
type namedFit struct {
	name string
	o    estimate.Options
}

// fitList is the fits compared with the truth, all in the form c asks
// for: the default starts, EM from the true parameters and from the
// perturbed ones (at the true rank only) and each single informed start.
func fitList(c config, m *pomdp.POMDP, d *ingest.Dataset, rank int, seed uint64) ([]namedFit, error) {
	fits := []namedFit{{"default", estimate.Options{Rank: rank, Seed: seed, Form: c.form}}}
	if rank == m.NumStates() {
		for i, w := range append([]float64{0}, c.perturb...) {
			start, err := m.TrueModel(d)
			if err != nil {
				return nil, err
			}
			perturb(start, w, rand.New(rand.NewPCG(seed, uint64(i))))
			if c.form == estimate.FormCompact {
				start = compactOf(start)
			}
			name := "from-true"
			if i > 0 {
				name = fmt.Sprintf("true~%.2g", w)
			}
			fits = append(fits, namedFit{name, estimate.Options{Rank: rank, Start: start, Restarts: 1, Seed: seed, Form: c.form}})
		}
	}
	for i := range c.starts {
		fits = append(fits, namedFit{fmt.Sprintf("start %d", i), estimate.Options{Rank: rank, Restarts: 1, Seed: 1000*seed + uint64(i), Form: c.form}})
	}
	return fits, nil
}

// perturb mixes every probability row of m (initial distribution, first
// emissions, transitions, emissions, categorical rewards) with a random
// row drawn uniformly from the simplex: (1 − w)·row + w·random.
func perturb(m *estimate.Model, w float64, rng *rand.Rand) {
	if w == 0 {
		return
	}
	mix := func(x []float64, n int) {
		for i := 0; i+n <= len(x); i += n {
			q := make([]float64, n)
			sum := 0.0
			for j := range q {
				q[j] = rng.ExpFloat64()
				sum += q[j]
			}
			for j := range q {
				x[i+j] = (1-w)*x[i+j] + w*q[j]/sum
			}
		}
	}
	S, O, V := m.States, m.NumObs, len(m.RewardValues)
	mix(m.Init, S)
	mix(m.Obs1, O)
	for t := range m.Trans {
		mix(m.Trans[t], S)
		mix(m.Emit[t], O)
		if m.Reward == estimate.RewardCategorical {
			mix(m.RewardProb[t], V)
		}
	}
	m.Prepare()
}

// compactOf is the full-form model f in the compact form: each state's
// emission under the first action, and each step's categorical reward
// at the entered state's most likely observation under the step's
// action. It is f itself when f's emissions ignore the action and its
// rewards the observation.
func compactOf(f *estimate.Model) *estimate.Model {
	c := *f
	c.Compact = true
	S, A, O, V := f.States, f.NumActions, f.NumObs, len(f.RewardValues)
	c.Emit = make([][]float64, len(f.Emit))
	c.RewardProb = make([][]float64, len(f.RewardProb))
	for t := range f.Emit {
		c.Emit[t] = append([]float64(nil), f.EmitOf(t, 0)...)
		rp := make([]float64, S*A*S*V)
		for s := range S {
			for a := range A {
				E := f.EmitOf(t, a)
				for s2 := range S {
					row := E[s2*O : (s2+1)*O]
					o := 0
					for j, p := range row {
						if p > row[o] {
							o = j
						}
					}
					i := f.RewardIndex(s, a, s2, o)
					copy(rp[((s*A+a)*S+s2)*V:], f.RewardProb[t][i*V:(i+1)*V])
				}
			}
		}
		c.RewardProb[t] = rp
	}
	c.Prepare()
	return &c
}

// fits runs each fit (without Θ_min) and prints its row, and with verbose
// the default model's parameters; a warm start from a truth with reward
// values the logs miss is reported and passed over.
func (s *study) fits(ctx context.Context, fits []namedFit, verbose bool) error {
	for _, f := range fits {
		if err := s.fit(ctx, f, verbose); err != nil {
			return err
		}
	}
	return nil
}

// fit runs one fit (without Θ_min) and prints its row, and with verbose
// the default model's parameters.
func (s *study) fit(ctx context.Context, f namedFit, verbose bool) error {
	f.o.SkipThetaMin = true
	res, err := estimate.Fit(ctx, s.d, f.o)
	if err != nil && f.o.Start != nil && errors.Is(err, estimate.ErrOptions) {
		fmt.Printf("%-10s (the logs miss a reward value of the truth: no warm start)\n", f.name)
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: %w", f.name, err)
	}
	if err := s.row(ctx, f.name, res.Model); err != nil {
		return err
	}
	if verbose && f.name == "default" && res.Model.States <= 8 {
		printModel(res.Model, f.name)
	}
	return nil
}

// grown prints the rows of a fit of rank c.grow with the default starts
// and of EM at rank from its split start (estimate.SplitStart), both on
// all the episodes.
func (s *study) grown(ctx context.Context, c config, rank int, seed uint64) error {
	small, err := estimate.Fit(ctx, s.d, estimate.Options{Rank: c.grow, Seed: seed, Form: c.form, SkipThetaMin: true})
	if err != nil {
		return err
	}
	if err := s.row(ctx, fmt.Sprintf("rank %d", c.grow), small.Model); err != nil {
		return err
	}
	split := estimate.SplitStart
	if c.persistent {
		split = estimate.PersistentSplitStart
	}
	o := split(estimate.Options{Restarts: 1, Seed: seed, Form: c.form, SkipThetaMin: true}, small.Model, rank, seed+uint64(rank))
	res, err := estimate.Fit(ctx, s.d, o)
	if err != nil {
		return err
	}
	return s.row(ctx, fmt.Sprintf("grown %d", rank), res.Model)
}

// rankSearch runs the automatic rank search, prints its table and the
// row of its model.
func (s *study) rankSearch(ctx context.Context, c config, seed uint64) error {
	rc, err := estimate.ChooseRank(ctx, s.d, estimate.Options{Seed: seed, Form: c.form})
	if err != nil {
		return err
	}
	for _, r := range rc.Table {
		fmt.Printf("  rank %2d: training ll %10.1f, held-out ll %10.1f, chosen %v\n", r.Rank, r.TrainLogLik, r.HeldOutLogLik, r.Chosen)
	}
	return s.row(ctx, fmt.Sprintf("search %d", rc.Rank), rc.Model)
}

// runRow prints the row of the model of the run directory dir.
func (s *study) runRow(ctx context.Context, dir string) error {
	mod, err := estimate.ReadModel(filepath.Join(dir, "model.arrow"))
	if err != nil {
		return err
	}
	if err := s.row(ctx, fmt.Sprintf("run %d", mod.States), mod); err != nil || s.refine == 0 {
		return err
	}
	res, err := estimate.Fit(ctx, s.d, estimate.Options{Rank: mod.States, Start: mod, Tol: s.refine, MaxIter: 3000, SkipThetaMin: true, Seed: 1})
	if err != nil {
		return err
	}
	fmt.Printf("refined at tol %g: %d E-steps, converged %v\n", s.refine, res.Iterations, res.Converged)
	return s.row(ctx, "refined", res.Model)
}

// tally prints how many of n pairs of starts ended at each log-likelihood
// per episode (to three decimals).
func tally(ctx context.Context, d *ingest.Dataset, rank, n int) error {
	count := map[string]int{}
	for i := range n {
		res, err := estimate.Fit(ctx, d, estimate.Options{Rank: rank, Seed: uint64(7000 + i), SkipThetaMin: true, Restarts: 2})
		if err != nil {
			return err
		}
		for _, ll := range res.RestartLogLiks {
			count[fmt.Sprintf("%.3f", ll/float64(d.NumEpisodes()))]++
		}
	}
	printTally(count, 2*n)
	return nil
}

// printTally prints how many of the starts ended at each final
// log-likelihood per episode, in increasing order of its text.
func printTally(count map[string]int, starts int) {
	keys := make([]string, 0, len(count))
	for k := range count {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Printf("final log-likelihood per episode of %d starts:", starts)
	for _, k := range keys {
		fmt.Printf(" %s ×%d", k, count[k])
	}
	fmt.Println()
}

// greedy plans α = 0 on mod.
func (s *study) greedy(ctx context.Context, mod *estimate.Model) (*policy.Policy, error) {
	b, err := pessimism.Build(ctx, mod, s.d, s.splits, pessimism.Options{Workers: s.workers})
	if err != nil {
		return nil, err
	}
	pol, st, err := policy.Plan(ctx, mod, b.WithAlpha(0), policy.PlanOptions{Workers: s.workers, Points: s.points})
	if err != nil {
		return nil, err
	}
	s.planNote = "exact"
	if !st.Exact {
		s.planNote = fmt.Sprintf("%s, %d points, stated gap %.3f", st.Planner, st.Points, st.GapBound)
	}
	return pol, nil
}

// row prints one model's figures.
func (s *study) row(ctx context.Context, name string, mod *estimate.Model) error {
	K := s.d.NumEpisodes()
	obs, joint := logLiks(s.d, s.H, mod)
	_, held := logLiks(s.heldOut, s.H, mod)
	v, vo, err := s.values(ctx, mod)
	if err != nil {
		return err
	}
	gap := s.vStar - s.vBehav
	fmt.Printf("%-10s %10.4f %10.4f %10.4f %10.4f %8.3f %8.3f %8.3f  %s\n", name, obs/float64(K), (joint-obs)/float64(K), joint/float64(K),
		held/float64(s.heldOut.NumEpisodes()), (s.vStar-v)/gap, vo, math.Abs(vo-s.vStar)/gap, s.planNote)
	return nil
}

// values are the exact value of the model's greedy plan, and the value
// the model gives the optimal policy.
func (s *study) values(ctx context.Context, mod *estimate.Model) (v, vo float64, err error) {
	pol, err := s.greedy(ctx, mod)
	if err != nil {
		return 0, 0, err
	}
	if v, err = pomdp.EvaluatePolicy(ctx, s.m, s.H, pol); err != nil {
		return 0, 0, err
	}
	vo, _, err = policy.ModelReturn(ctx, mod, s.optimal)
	return v, vo, err
}

// logLiks are mod's log-likelihoods of the logs d of H steps: of the
// observations, ln P(o|a), and of the observations and rewards together.
func logLiks(d *ingest.Dataset, H int, mod *estimate.Model) (obs, joint float64) {
	for k := range d.NumEpisodes() {
		o, a, r := d.Obs[k*H:(k+1)*H], d.Act[k*H:(k+1)*H], d.Reward[k*H:(k+1)*H]
		obs += mod.ObsLogLik(o, a)
		joint += mod.EpisodeLogLik(o, a, r)
	}
	return obs, joint
}

// printModel prints a model's initial distribution, transitions and
// emissions per action, and E[r | s, a] per state.
func printModel(mod *estimate.Model, name string) {
	fmt.Printf("%s: init %.2f\n", name, mod.Init)
	for a := range mod.NumActions {
		printAction(mod, a)
	}
	printRewards(mod)
}

// printAction prints the transitions and emissions of action a, one row
// per state.
func printAction(mod *estimate.Model, a int) {
	S := mod.States
	fmt.Printf("  T(·|s,%s):", mod.ActVocab[a])
	for s := range S {
		fmt.Printf(" %.2f", mod.Trans[0][(a*S+s)*S:(a*S+s+1)*S])
	}
	fmt.Printf("\n  E(·|s',%s) %v:", mod.ActVocab[a], mod.ObsVocab)
	for s := range S {
		fmt.Printf(" %.2f", mod.EmitOf(0, a)[s*mod.NumObs:(s+1)*mod.NumObs])
	}
	fmt.Println()
}

// printRewards prints E[r | s, a] at step 1, a row per state.
func printRewards(mod *estimate.Model) {
	S := mod.States
	fmt.Printf("  E[r|s,a] %v\n", mod.ActVocab)
	b := make([]float64, S)
	for s := range S {
		clear(b)
		b[s] = 1
		fmt.Printf("  s%-3d", s)
		for a := range mod.NumActions {
			fmt.Printf(" %8.2f", mod.ExpectedReward(1, b, a))
		}
		fmt.Println()
	}
}
