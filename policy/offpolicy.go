package policy

import (
	"fmt"
	"math"

	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
)

// DefaultZ is the normal quantile of the importance-weighted interval:
// 1.96 gives a two-sided 95% interval (one-sided 97.5% lower bound).
const DefaultZ = 1.96

// MinClaimESS is the least effective sample size at which an
// importance-weighted interval counts as evidence about a policy: on
// fewer effective episodes its normal interval is too narrow to trust.
// The behaviour fallback (package pipeline) and the verdict (package
// report) both decide with it.
const MinClaimESS = 30

// Weights returns the importance weight of every episode of d under the
// policy pol:
//
//	w_k = Π_h π(a_h | τ_{h−1}, o_h) / π^b(a_h | τ_{h−1}, o_h)
//
// with π^b the dataset's propensities and π(a|·) = 1[a = π̄(o_1..o_h)]
// for a deterministic policy, its actions found with the lookup rule of
// Cursor (Cursor.Take). After the end symbol the action is forced for every
// policy, so those steps count as matching (their propensity is 1).
func Weights(pol *Policy, d *ingest.Dataset) ([]float64, error) {
	w := make([]float64, d.NumEpisodes())
	err := walkLogs(pol, d, func(k, h int, ok bool, prefix float64, node int64) {
		if h == d.Horizon-1 || !ok {
			if ok {
				w[k] = prefix
			}
		}
	})
	return w, err
}

// walkLogs follows every episode of d through pol. visit is called for
// each step h (0-based) while the episode's actions agree with the
// policy (ok true, prefix the weight of τ_{h+1} including a_{h+1}, node
// the policy node of step h+1 or −1 outside the tree) and once with ok
// false at the first disagreement (node is then the node of o_{h+1},
// which the history reached by following the policy).
func walkLogs(pol *Policy, d *ingest.Dataset, visit func(k, h int, ok bool, prefix float64, node int64)) error {
	if err := checkLogs(pol, d); err != nil {
		return err
	}
	for k := 0; k < d.NumEpisodes(); k++ {
		if err := walkEpisode(pol, d, k, visit); err != nil {
			return err
		}
	}
	return nil
}

// checkLogs checks that d has propensities and holds whole episodes of
// pol's horizon.
func checkLogs(pol *Policy, d *ingest.Dataset) error {
	if pol == nil || d == nil {
		return fmt.Errorf("%w: no policy or no dataset", ErrData)
	}
	if !d.HasPropensity() {
		return fmt.Errorf("%w: importance weights need propensities (logged or estimated)", ErrData)
	}
	return checkLogShape(pol, d)
}

// checkLogShape checks that the policy's horizon is the dataset's and
// that the dataset's arrays hold its episodes.
func checkLogShape(pol *Policy, d *ingest.Dataset) error {
	H, K := d.Horizon, d.NumEpisodes()
	if pol.Horizon != 0 && pol.Horizon != H {
		return fmt.Errorf("%w: policy horizon %d, dataset horizon %d", ErrData, pol.Horizon, H)
	}
	if len(d.Obs) != K*H || len(d.Act) != K*H || len(d.Propensity) != K*H {
		return fmt.Errorf("%w: dataset arrays do not hold %d episodes of %d steps", ErrData, K, H)
	}
	return nil
}

// walkEpisode follows episode k of d through pol, calling visit as
// walkLogs says.
func walkEpisode(pol *Policy, d *ingest.Dataset, k int, visit func(k, h int, ok bool, prefix float64, node int64)) error {
	H := d.Horizon
	st := *pol.NewCursor()
	prefix := 1.0
	for h := 0; h < H; h++ {
		obs, act, p, err := loggedSymbols(d, k, h)
		if err != nil {
			return err
		}
		q, ok, node := loggedStep(&st, obs, act)
		if !ok || q == 0 {
			visit(k, h, false, 0, node)
			break
		}
		if q != 1 {
			prefix *= q
		}
		prefix /= p
		visit(k, h, true, prefix, node)
	}
	return nil
}

// loggedSymbols returns the observation, the action and the propensity
// of episode k's step h (0-based), checked.
func loggedSymbols(d *ingest.Dataset, k, h int) (obs, act string, p float64, err error) {
	i := k*d.Horizon + h
	if int(d.Obs[i]) >= len(d.ObsVocab) || int(d.Act[i]) >= len(d.ActVocab) {
		return "", "", 0, fmt.Errorf("%w: episode %s step %d: code out of vocabulary", ErrData, d.EpisodeIDs[k], h+1)
	}
	p, err = propensity(d, k, h)
	return d.ObsVocab[d.Obs[i]], d.ActVocab[d.Act[i]], p, err
}

// propensity is the logged propensity of episode k's step h (0-based),
// which must lie in (0, 1].
func propensity(d *ingest.Dataset, k, h int) (float64, error) {
	p := d.Propensity[k*d.Horizon+h]
	if !(p > 0 && p <= 1) {
		return 0, fmt.Errorf("%w: episode %s step %d: propensity %v", ErrData, d.EpisodeIDs[k], h+1, p)
	}
	return p, nil
}

// loggedStep moves the cursor st by the logged observation obs and
// action act and returns the policy's probability of act there (1 after
// the end symbol, where the action is forced), whether the policy has an
// action for the history, and the node it used (−1 outside the tree).
func loggedStep(st *Cursor, obs, act string) (q float64, ok bool, node int64) {
	q, ok = st.Take(obs, act)
	if obs == ingest.EndSymbol {
		q, ok = 1, true
	}
	node = st.node
	if st.left {
		node = -1
	}
	return q, ok, node
}

// newCoverage returns the coverage of pol's steps 1..H before the logs
// are walked: each step's number of table nodes.
func newCoverage(pol *Policy, H int) *Coverage {
	c := &Coverage{Steps: make([]StepCoverage, H)}
	for h := range c.Steps {
		c.Steps[h].Step = h + 1
	}
	for _, n := range pol.Nodes {
		if n.Step >= 1 && int(n.Step) <= H {
			c.Steps[n.Step-1].Nodes++
		}
	}
	return c
}

// IWResult is an importance-weighted estimate of a policy's value from
// logs.
type IWResult struct {
	N       int     `json:"episodes"`
	Matched int     `json:"matched"`   // episodes with a positive weight
	Mean    float64 `json:"iw_value"`  // (1/N) Σ w_k R_k, R rescaled to [0,1]
	StdErr  float64 `json:"iw_stderr"` // sample standard deviation of w_k R_k / sqrt(N)
	Lower   float64 `json:"iw_lower"`  // Mean − z·StdErr
	Upper   float64 `json:"iw_upper"`  // Mean + z·StdErr
	ESS     float64 `json:"ess"`       // (Σ w)² / Σ w²
	Z       float64 `json:"z"`
}

// IWEstimate is the ordinary importance-weighted estimate of V_R^π from the
// logs d: (1/N) Σ_k w_k R_k with R_k the rescaled return
// (m.RescaleReturn), its normal interval Mean ± z·StdErr (z ≤ 0 means
// DefaultZ) and the effective sample size (Σw)²/Σw². The estimator is
// unbiased when the propensities are the behaviour's; the interval is a
// central-limit approximation, too narrow when few episodes match.
func IWEstimate(m *estimate.Model, pol *Policy, d *ingest.Dataset, z float64) (IWResult, error) {
	if z <= 0 {
		z = DefaultZ
	}
	w, err := Weights(pol, d)
	if err != nil {
		return IWResult{}, err
	}
	res := IWResult{N: len(w), Z: z}
	if res.N == 0 {
		return res, fmt.Errorf("%w: no episodes to estimate from", ErrData)
	}
	res.setMoments(weightedSums(m, d, w))
	res.Lower, res.Upper = res.Mean-z*res.StdErr, res.Mean+z*res.StdErr
	return res, nil
}

// setMoments sets the matched count, the mean, its standard error and
// the effective sample size from the sums s of res.N episodes.
func (res *IWResult) setMoments(s iwSums) {
	res.Matched = s.matched
	n := float64(res.N)
	res.Mean = s.sx / n
	if res.N > 1 {
		v := (s.sx2 - n*res.Mean*res.Mean) / (n - 1)
		res.StdErr = math.Sqrt(math.Max(v, 0) / n)
	}
	if s.sw2 > 0 {
		res.ESS = s.sw * s.sw / s.sw2
	}
}

// iwSums are IWEstimate's sums over the episodes: Σw, Σw², Σx, Σx² with
// x = w·(rescaled return), and the number of positive weights.
type iwSums struct {
	sw, sw2, sx, sx2 float64
	matched          int
}

// weightedSums returns the sums of the episodes of d with weights w.
func weightedSums(m *estimate.Model, d *ingest.Dataset, w []float64) iwSums {
	var s iwSums
	for k, wk := range w {
		if wk > 0 {
			s.matched++
		}
		x := wk * m.RescaleReturn(d.Return(k))
		s.sw += wk
		s.sw2 += wk * wk
		s.sx += x
		s.sx2 += x * x
	}
	return s
}

// StepCoverage is the coverage of a policy's histories at step h.
type StepCoverage struct {
	Step int `json:"step"`
	// Logged is the number of episodes whose prefix (o_1, a_1, …, o_h)
	// follows the policy (a_1..a_{h−1} are its actions).
	Logged int `json:"logged_histories"`
	// Nodes is the number of policy nodes at step h.
	Nodes int `json:"policy_nodes"`
	// CoveredMass is Σ P_θ̂^π̄ over the step-h nodes some such prefix
	// reaches: the mass of the policy's reachable histories (under θ̂)
	// that the logs cover.
	CoveredMass float64 `json:"covered_mass"`
}

// Coverage is the coverage of a policy by the logs.
type Coverage struct {
	Steps []StepCoverage `json:"steps"`
	// CInf is the C∞ estimate: the largest P^π̄(τ_h)/P^{π^b}(τ_h) over the
	// logged prefixes τ_h = (o_1, a_1, …, o_h, a_h) whose actions all
	// follow π̄, h = 1..H. The model's factor P(o_{1:h}|a_{1:h}) cancels,
	// so the ratio is Π_{t≤h} 1/π^b(a_t | τ_{t−1}, o_t). Histories the logs
	// never contain do not enter (1 − CoveredMass shows how much of π̄'s
	// mass that leaves out), so it is a lower estimate of C∞ (docs/design.md,
	// section 2).
	CInf float64 `json:"c_inf"`
	// CInfEpisode and CInfStep locate the maximising prefix.
	CInfEpisode string `json:"c_inf_episode"`
	CInfStep    int    `json:"c_inf_step"`
}

// CoverageOf computes per-step coverage and the C∞ estimate of pol on d.
func CoverageOf(pol *Policy, d *ingest.Dataset) (*Coverage, error) {
	cw := &coverageWalk{c: newCoverage(pol, d.Horizon), pol: pol, d: d, seen: make([]bool, len(pol.Nodes))}
	if err := walkLogs(pol, d, cw.visit); err != nil {
		return nil, err
	}
	return cw.c, nil
}

// coverageWalk is CoverageOf's state along the logs: the coverage so
// far and the policy's nodes already counted.
type coverageWalk struct {
	c    *Coverage
	pol  *Policy
	d    *ingest.Dataset
	seen []bool
}

// visit counts the logged step h of episode k (at the policy's node, −1
// once off the table) and keeps the largest ratio prefix of a step the
// policy takes.
func (cw *coverageWalk) visit(k, h int, ok bool, prefix float64, node int64) {
	c := cw.c
	// (o_1, a_1, …, o_{h+1}) follows the policy either way.
	c.Steps[h].Logged++
	cw.cover(h, node)
	if ok && prefix > c.CInf {
		c.CInf, c.CInfEpisode, c.CInfStep = prefix, cw.d.EpisodeIDs[k], h+1
	}
}

// cover adds the reach probability of node, the first time it is
// logged, to the covered mass of step h.
func (cw *coverageWalk) cover(h int, node int64) {
	if node >= 0 && !cw.seen[node] {
		cw.seen[node] = true
		cw.c.Steps[h].CoveredMass += cw.pol.Nodes[node].ReachProb
	}
}
