// Command card-iw estimates a fitted policy's value on held-out logs by
// importance weighting, beside the behaviour's mean return on the same
// logs (bench/cardinality.sh):
//
//	go run ./bench/card-iw -policy runs/x -logs heldout.parquet
//
// It prints one JSON object: the behaviour's mean return, the ordinary
// (trajectory) importance-weighted estimate Σ_k w_k R_k / K with
// w_k = Π_h π̄(a_h|…)/π^b(a_h|…) (π̄(a_h|…) = 1[a_h = π̄(o_1..o_h)] for a
// deterministic policy, the row's probability for a stochastic one,
// policy.Cursor.Take), and the per-decision estimate
// Σ_h Σ_k w_{k,1:h} r_{k,h} / K, each with its standard error. Both are
// unbiased for the policy's value; the per-decision one has far smaller
// variance when |A|^H is large. Per step it also prints the behaviour's
// mean reward and the policy's per-decision estimate of its reward: with
// |A| = 50 only the first steps have enough episodes that follow the
// policy for an informative estimate. Observations the policy does not know
// follow the lookup rule of policy.Cursor (the fallback action).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/policy"
)

type estimate struct {
	Mean   float64 `json:"mean"`
	StdErr float64 `json:"stderr"`
}

func meanSE(x []float64) estimate {
	n := float64(len(x))
	s, s2 := 0.0, 0.0
	for _, v := range x {
		s += v
		s2 += v * v
	}
	m := s / n
	return estimate{m, math.Sqrt(math.Max(s2/n-m*m, 0) / n)}
}

func main() {
	polPath := flag.String("policy", "", "run directory or policy.arrow")
	logs := flag.String("logs", "", "held-out logs (Parquet)")
	flag.Parse()
	if *polPath == "" || *logs == "" {
		fmt.Fprintln(os.Stderr, "card-iw: -policy and -logs are required")
		os.Exit(2)
	}
	pol, d, err := load(*polPath, *logs)
	if err != nil {
		fmt.Fprintln(os.Stderr, "card-iw:", err)
		os.Exit(3)
	}
	b, _ := json.Marshal(iwSumsOf(pol, d).summary())
	fmt.Println(string(b))
}

// load reads the policy (a run directory's policy.arrow, or the file
// itself) and the held-out logs.
func load(polPath, logs string) (*policy.Policy, *ingest.Dataset, error) {
	p := polPath
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		p = filepath.Join(p, "policy.arrow")
	}
	pol, _, err := policy.ReadFile(p)
	if err != nil {
		return nil, nil, err
	}
	d, err := ingest.Read(context.Background(), []string{logs}, ingest.Options{})
	if err != nil {
		return nil, nil, err
	}
	return pol, d, nil
}

// iwSums holds, per episode, the return and the policy's trajectory and
// per-decision importance-weighted terms, and per step the episodes that
// still follow the policy (a positive weight).
type iwSums struct {
	K, H            int
	ret, traj, pd   []float64
	matched         []int
	behStep, pdStep [][]float64
}

// iwSumsOf is the sums of the policy's importance weights over every
// episode of d.
func iwSumsOf(pol *policy.Policy, d *ingest.Dataset) *iwSums {
	e := newIWSums(d.NumEpisodes(), d.Horizon)
	for k := 0; k < e.K; k++ {
		e.episode(pol, d, k)
	}
	return e
}

// newIWSums is the zero sums of K episodes of H steps.
func newIWSums(K, H int) *iwSums {
	e := &iwSums{K: K, H: H}
	e.ret, e.traj, e.pd = make([]float64, K), make([]float64, K), make([]float64, K)
	e.matched = make([]int, H)
	// Per step h: the behaviour's reward and the per-decision term
	// w_{k,1:h}·r_{k,h} of the policy.
	e.behStep, e.pdStep = make([][]float64, H), make([][]float64, H)
	for h := range e.behStep {
		e.behStep[h], e.pdStep[h] = make([]float64, K), make([]float64, K)
	}
	return e
}

// episode adds episode k: its return and rewards, and the policy's
// weights w_{k,1:h} while its actions match the logged ones.
func (e *iwSums) episode(pol *policy.Policy, d *ingest.Dataset, k int) {
	H := e.H
	c := pol.NewCursor()
	w := 1.0
	for h := 0; h < H; h++ {
		i := k*H + h
		r := d.Reward[i]
		e.ret[k] += r
		e.behStep[h][k] = r
		if w != 0 {
			w = e.weigh(c, d, k, h, w)
		}
	}
	e.traj[k] = w * e.ret[k]
}

// weigh moves the policy's cursor c by step h of episode k and returns
// the importance weight w after it: 0 when the policy never takes the
// logged action there, else w times the policy's probability of it over
// the propensity, whose per-decision term it adds.
func (e *iwSums) weigh(c *policy.Cursor, d *ingest.Dataset, k, h int, w float64) float64 {
	i := k*e.H + h
	q, ok := c.Take(d.ObsVocab[d.Obs[i]], d.ActVocab[d.Act[i]])
	if !ok || q == 0 {
		return 0
	}
	w = w * q / d.Propensity[i]
	e.matched[h]++
	e.pd[k] += w * d.Reward[i]
	e.pdStep[h][k] = w * d.Reward[i]
	return w
}

// summary is the JSON object printed: the estimates with their standard
// errors, per step and in all.
func (e *iwSums) summary() map[string]any {
	var beh, polStep []estimate
	for h := 0; h < e.H; h++ {
		beh, polStep = append(beh, meanSE(e.behStep[h])), append(polStep, meanSE(e.pdStep[h]))
	}
	return map[string]any{
		"behavior_step": beh,
		"policy_step":   polStep,
		"episodes":      e.K,
		"behavior":      meanSE(e.ret),
		"iw":            meanSE(e.traj),
		"per_decision":  meanSE(e.pd),
		"matched_steps": e.matched,
	}
}
