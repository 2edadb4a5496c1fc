package pessimism

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/psrlcb/psrlcb/ingest"
)

// AlphaMode says how α is chosen.
type AlphaMode int

const (
	// AlphaAuto, the zero value and the default: the candidates of
	// AutoAlphas, one chosen by cross-fitting (policy.Select).
	AlphaAuto AlphaMode = iota
	// AlphaFixed: one given value.
	AlphaFixed
	// AlphaTheory: the paper's α̂ (TheoryAlpha).
	AlphaTheory
	// AlphaList: a list of candidates, one chosen on held-out episodes
	// (policy.Select).
	AlphaList
)

// AutoAlphas is the grid of "auto": a geometric grid around DefaultAlpha
// wide enough to go from a negligible bonus to one saturated on most
// trajectories for K from 10² to 10⁶. It leaves out α = 0 on purpose: the
// zero-bonus plan is greedy maximum likelihood, and its "lower bound" is
// the model's own value, which is no bound at all (in the validation study
// every run where auto picked α = 0 reported a bound above the policy's
// true value). α = 0 stays available through --alpha 0 or a list.
func AutoAlphas() []float64 { return []float64{0.03, 0.1, 0.3, 1, 3, 10} }

// AlphaSpec is a parsed --alpha value. The zero value is "auto".
type AlphaSpec struct {
	Mode   AlphaMode
	Values []float64 // AlphaFixed: one value; AlphaList: the candidates
}

// Candidates are the α values to choose among: AutoAlphas for auto, the
// given values otherwise (none for theory).
func (a AlphaSpec) Candidates() []float64 {
	if a.Mode == AlphaAuto {
		return AutoAlphas()
	}
	return append([]float64(nil), a.Values...)
}

// String is the spec as --alpha takes it: "auto", "theory" or the values
// joined by commas. The manifest records it, so the same run spelled as a
// flag or as a Go zero value has one run id.
func (a AlphaSpec) String() string {
	switch a.Mode {
	case AlphaAuto:
		return "auto"
	case AlphaTheory:
		return "theory"
	}
	s := make([]string, len(a.Values))
	for i, v := range a.Values {
		s[i] = strconv.FormatFloat(v, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}

// ParseAlpha parses "0.5", "theory", "0,0.3,1" or "auto" (AutoAlphas).
// The empty string means "auto", the default.
func ParseAlpha(s string) (AlphaSpec, error) {
	s = strings.TrimSpace(s)
	if spec, ok := namedAlpha(s); ok {
		return spec, nil
	}
	vals, err := parseAlphas(s)
	if err != nil {
		return AlphaSpec{}, err
	}
	if len(vals) == 1 {
		return AlphaSpec{Mode: AlphaFixed, Values: vals}, nil
	}
	return AlphaSpec{Mode: AlphaList, Values: vals}, nil
}

// namedAlpha is the spec of the named modes "auto" (or empty) and
// "theory", in any case; ok is false for any other s.
func namedAlpha(s string) (spec AlphaSpec, ok bool) {
	switch strings.ToLower(s) {
	case "", "auto":
		return AlphaSpec{Mode: AlphaAuto}, true
	case "theory":
		return AlphaSpec{Mode: AlphaTheory}, true
	}
	return AlphaSpec{}, false
}

// parseAlphas parses the comma-separated list of non-negative numbers s.
func parseAlphas(s string) ([]float64, error) {
	parts := strings.Split(s, ",")
	vals := make([]float64, 0, len(parts))
	for _, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%w: alpha %q: want a non-negative number, a comma-separated list, \"theory\" or \"auto\"", ErrOptions, p)
		}
		vals = append(vals, v)
	}
	return vals, nil
}

// TheoryParams are the inputs of the paper's α̂.
type TheoryParams struct {
	Gamma      float64 // γ of the well-conditioning assumption, user-given, > 0
	Delta      float64 // confidence level δ (default 0.05)
	Lambda     float64 // λ
	Iota       float64 // ι, see Iota
	Episodes   int     // K
	Horizon    int     // H
	Obs        int     // |O|
	Actions    int     // |A|
	Rank       int     // r, latent states of the model
	TestLength int     // m (0 means 1)
	MaxDim     int     // d = max_h d_h
}

// Theory is α̂ with its ingredients, for the report.
type Theory struct {
	Alpha     float64
	BetaHat   float64 // β̂
	LogNet    float64 // ln|Θ̄_ε|
	LogPMin   float64 // ln p_min
	LogEps    float64 // ln ε
	QA        int     // Q_A = |A|^{m−1}
	D         int     // d
	Iota      float64
	Gamma     float64
	Lambda    float64
	FirstTerm float64 // 4λHQ_A²d/γ⁴
	DataTerm  float64 // 7β̂/(ι²γ²)
}

// TheoryAlpha computes the paper's LCB coefficient (Corollary 3 in
// Appendix D of Huang, Liang, Yang (ICLR 2024, arXiv:2307.00405): α̂ = sqrt(4λHQ_A²d/γ⁴ + 7β̂/(ι²γ²))) with
//
//	β̂ = 31·ln(3K|Θ̄_ε|/δ)                      (Lemma, offline MLE guarantee)
//	ln|Θ̄_ε| ≤ 2r²|O||A|H²·ln(|O||A|/ε)          (Proposition, optimistic net of tabular PSRs)
//	ε = p_min/(KH),  p_min = δ/(KH(|O||A|)^H)    (Theorem, offline PSR-LCB)
//	Q_A = |A|^{m−1}                             (eq. (POMDP notation))
//
// all in log space. The O(·) constants of the theorem are taken as 1.
func TheoryAlpha(p TheoryParams) (Theory, error) {
	delta, err := p.checkedDelta()
	if err != nil {
		return Theory{}, err
	}
	th := Theory{Iota: p.Iota, Gamma: p.Gamma, Lambda: p.lambda(), D: p.MaxDim}
	th.setBetaHat(p, delta)
	th.setAlpha(p)
	return th, nil
}

// lambda is the ridge λ of the bonus, DefaultLambda when unset.
func (p TheoryParams) lambda() float64 {
	if p.Lambda == 0 {
		return DefaultLambda
	}
	return p.Lambda
}

// setBetaHat sets β̂ = 31·ln(3K|Θ̄_ε|/δ) and the terms it is built from:
// ln p_min, ln ε and the bound on ln|Θ̄_ε|.
func (th *Theory) setBetaHat(p TheoryParams, delta float64) {
	K, H := float64(p.Episodes), float64(p.Horizon)
	lnOA := math.Log(float64(p.Obs) * float64(p.Actions))
	th.LogPMin = math.Log(delta) - math.Log(K) - math.Log(H) - H*lnOA
	th.LogEps = th.LogPMin - math.Log(K) - math.Log(H)
	r := float64(p.Rank)
	th.LogNet = 2 * r * r * float64(p.Obs) * float64(p.Actions) * H * H * (lnOA - th.LogEps)
	th.BetaHat = 31 * (math.Log(3) + math.Log(K) + th.LogNet - math.Log(delta))
}

// setAlpha sets Q_A = |A|^{m−1}, the two terms of α̂ and α̂ itself from
// β̂ (set by setBetaHat) and λ.
func (th *Theory) setAlpha(p TheoryParams) {
	m := max(p.TestLength, 1)
	th.QA = int(math.Pow(float64(p.Actions), float64(m-1)))
	qa, g, H := float64(th.QA), p.Gamma, float64(p.Horizon)
	th.FirstTerm = 4 * th.Lambda * H * qa * qa * float64(p.MaxDim) / (g * g * g * g)
	th.DataTerm = 7 * th.BetaHat / (p.Iota * p.Iota * g * g)
	th.Alpha = math.Sqrt(th.FirstTerm + th.DataTerm)
}

// checkedDelta checks TheoryAlpha's parameters and returns δ (0.05 when
// unset).
func (p TheoryParams) checkedDelta() (float64, error) {
	if err := p.check(); err != nil {
		return 0, err
	}
	delta := p.Delta
	if delta == 0 {
		delta = 0.05
	}
	if !(delta > 0 && delta < 1) {
		return 0, fmt.Errorf("%w: δ = %v must lie in (0,1)", ErrOptions, delta)
	}
	return delta, nil
}

// check says whether γ, ι and the sizes K, H, |O|, |A|, r and d are valid
// for TheoryAlpha.
func (p TheoryParams) check() error {
	if !(p.Gamma > 0) || math.IsInf(p.Gamma, 0) {
		return fmt.Errorf("%w: theory alpha needs γ > 0 (got %v)", ErrOptions, p.Gamma)
	}
	if !(p.Iota > 0 && p.Iota <= 1) {
		return fmt.Errorf("%w: theory alpha needs ι in (0,1] (got %v)", ErrOptions, p.Iota)
	}
	if p.Episodes <= 0 || p.Horizon <= 0 || p.Obs <= 0 || p.Actions <= 0 || p.Rank <= 0 || p.MaxDim <= 0 {
		return fmt.Errorf("%w: theory alpha needs positive K, H, |O|, |A|, r and d", ErrOptions)
	}
	return nil
}

// Iota estimates ι = min_{a ∈ Q_h^exp} π^b(a) (Theorem, offline PSR-LCB)
// from the logged propensities. For core tests of length m the
// exploratory action sequences at step h are a_h followed by the m−1
// actions inside a test, so π^b of one of them is the product of the
// propensities of m consecutive steps (fewer near the end). ι is the
// least such product over every window of every logged episode: only
// action sequences the logs contain enter, so it is an upper estimate of
// the paper's ι (a sequence never logged may have a smaller probability).
// With m = 1 it is the least logged propensity. Forced steps after the
// end of an episode have propensity 1 and do not lower it.
func Iota(d *ingest.Dataset, testLength int) (float64, error) {
	if d == nil || !d.HasPropensity() {
		return 0, fmt.Errorf("%w: ι needs propensities (logged or estimated)", ErrData)
	}
	m := max(testLength, 1)
	H, K := d.Horizon, d.NumEpisodes()
	if K == 0 {
		return 0, fmt.Errorf("%w: ι of an empty dataset", ErrData)
	}
	iota := 1.0
	for k := 0; k < K; k++ {
		iota = minWindowProduct(iota, d.Propensity[k*H:(k+1)*H], m)
	}
	return iota, nil
}

// minWindowProduct is the smaller of iota and the least product of the
// propensities p over a window of m steps (shorter at the end).
func minWindowProduct(iota float64, p []float64, m int) float64 {
	H := len(p)
	for h := 0; h < H; h++ {
		prod := 1.0
		for j := h; j < min(h+m, H); j++ {
			prod *= p[j]
		}
		iota = math.Min(iota, prod)
	}
	return iota
}
