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
//	run        the model of a fit's run directory (--runs, one per seed:
//	           a path with %d for the seed), e.g. `psrlcb fit` at its
//	           defaults on the logs `psrlcb simulate --seed S` writes,
//	           which are the logs of seed S here
//
// For each model it prints the observation and reward log-likelihoods
// per episode (ln P(o|a) and ln P(r|o,a) of the logs), the normalized
// regret (V* − V^π)/(V* − V^b) of the model's greedy plan (α = 0, so
// neither α nor the bonus enters), the value the model gives the truly
// optimal policy, and that value's error as a share of V* − V^b.
// --random N tallies the final log-likelihoods of N pairs of starts (an
// informed and a random one each), to count how often EM reaches the
// best optimum.
//
// Usage:
//
//	go run ./bench/decide --pomdp ../shared/pomdp/stand-tiger.95.pomdp \
//	    --horizon 4 --episodes 10000 [--seeds 3] [--rank 0] [--starts 4] \
//	    [--ranks] [--random 25] [--points 500] [--runs 'run-%d'] [-v]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sort"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
	"github.com/psrlcb/psrlcb/policy"
	"github.com/psrlcb/psrlcb/pomdp"
	"github.com/psrlcb/psrlcb/split"
)

type config struct {
	file, behavior       string
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
	H        int
	vStar    float64
	vBehav   float64
	optimal  *policy.Policy // the true model's greedy plan: an optimal policy
	splits   [][]int
	workers  int
	points   int
	planNote string
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
	fmt.Printf("seed %d\n%-10s %10s %10s %10s %8s %8s %8s  plan\n", seed, "model", "obs ll/ep", "rew ll/ep", "ll/ep", "regret", "V_θ(π*)", "err(π*)")
	if err := s.truthRow(ctx, truth, c.verbose); err != nil {
		return err
	}
	if err := s.fits(ctx, fitList(c, m, rank, seed, truth), c.verbose); err != nil {
		return err
	}
	return s.extras(ctx, c, rank, seed)
}

// extras prints what c asks for beyond the models' rows: the rank
// search's table, the rows of earlier runs and the tally of random starts.
func (s *study) extras(ctx context.Context, c config, rank int, seed uint64) error {
	if c.ranks {
		if err := s.rankSearch(ctx, seed); err != nil {
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
	s := &study{m: m, d: d, H: c.H, vStar: vStar, vBehav: vb, splits: splits, workers: runtime.GOMAXPROCS(0), points: c.points}
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

// fitList is the fits compared with the truth: the default starts, EM
// from the true parameters (at the true rank only) and each single
// informed start.
func fitList(c config, m *pomdp.POMDP, rank int, seed uint64, truth *estimate.Model) []namedFit {
	fits := []namedFit{{"default", estimate.Options{Rank: rank, Seed: seed}}}
	if rank == m.NumStates() {
		fits = append(fits, namedFit{"from-true", estimate.Options{Rank: rank, Start: truth, Restarts: 1, Seed: seed}})
	}
	for i := range c.starts {
		fits = append(fits, namedFit{fmt.Sprintf("start %d", i), estimate.Options{Rank: rank, Restarts: 1, Seed: 1000*seed + uint64(i)}})
	}
	return fits
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

// rankSearch runs the automatic rank search, prints its table and the
// row of its model.
func (s *study) rankSearch(ctx context.Context, seed uint64) error {
	rc, err := estimate.ChooseRank(ctx, s.d, estimate.Options{Seed: seed})
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
	return s.row(ctx, fmt.Sprintf("run %d", mod.States), mod)
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
	obs, joint := s.logLiks(mod)
	v, vo, err := s.values(ctx, mod)
	if err != nil {
		return err
	}
	gap := s.vStar - s.vBehav
	fmt.Printf("%-10s %10.4f %10.4f %10.4f %8.3f %8.3f %8.3f  %s\n", name, obs/float64(K), (joint-obs)/float64(K), joint/float64(K),
		(s.vStar-v)/gap, vo, math.Abs(vo-s.vStar)/gap, s.planNote)
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

// logLiks are mod's log-likelihoods of the logs: of the observations,
// ln P(o|a), and of the observations and rewards together.
func (s *study) logLiks(mod *estimate.Model) (obs, joint float64) {
	K, H := s.d.NumEpisodes(), s.H
	for k := range K {
		o, a, r := s.d.Obs[k*H:(k+1)*H], s.d.Act[k*H:(k+1)*H], s.d.Reward[k*H:(k+1)*H]
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
