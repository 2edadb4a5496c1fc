// Command card-iw estimates a fitted policy's value on held-out logs by
// importance weighting, beside the behaviour's mean return on the same
// logs (bench/cardinality.sh):
//
//	go run ./bench/card-iw -policy runs/x -logs heldout.parquet
//
// It prints one JSON object: the behaviour's mean return, the ordinary
// (trajectory) importance-weighted estimate Σ_k w_k R_k / K with
// w_k = Π_h 1[a_h = π̄(o_1..o_h)]/π^b(a_h|…), and the per-decision estimate
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
	p := *polPath
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		p = filepath.Join(p, "policy.arrow")
	}
	pol, _, err := policy.ReadFile(p)
	if err != nil {
		fmt.Fprintln(os.Stderr, "card-iw:", err)
		os.Exit(3)
	}
	d, err := ingest.Read(context.Background(), []string{*logs}, ingest.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "card-iw:", err)
		os.Exit(3)
	}
	K, H := d.NumEpisodes(), d.Horizon
	ret, traj, pd := make([]float64, K), make([]float64, K), make([]float64, K)
	matched := make([]int, H)
	// Per step h: the behaviour's reward and the per-decision term
	// w_{k,1:h}·r_{k,h} of the policy.
	behStep, pdStep := make([][]float64, H), make([][]float64, H)
	for h := range behStep {
		behStep[h], pdStep[h] = make([]float64, K), make([]float64, K)
	}
	for k := 0; k < K; k++ {
		c := pol.NewCursor()
		w := 1.0
		for h := 0; h < H; h++ {
			i := k*H + h
			r := d.Reward[i]
			ret[k] += r
			behStep[h][k] = r
			if w == 0 {
				continue
			}
			a, _, ok := c.Act(d.ObsVocab[d.Obs[i]])
			if !ok || a != d.ActVocab[d.Act[i]] {
				w = 0
				continue
			}
			w /= d.Propensity[i]
			matched[h]++
			pd[k] += w * r
			pdStep[h][k] = w * r
		}
		traj[k] = w * ret[k]
	}
	var beh, polStep []estimate
	for h := 0; h < H; h++ {
		beh, polStep = append(beh, meanSE(behStep[h])), append(polStep, meanSE(pdStep[h]))
	}
	out := map[string]any{
		"behavior_step": beh,
		"policy_step":   polStep,
		"episodes":      K,
		"behavior":      meanSE(ret),
		"iw":            meanSE(traj),
		"per_decision":  meanSE(pd),
		"matched_steps": matched,
	}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
}
