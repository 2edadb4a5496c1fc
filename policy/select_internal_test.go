package policy

import "testing"

// TestChoose: saturated candidates are skipped even with the best
// criterion, exact ties go to the larger α, and when every candidate is
// saturated the smallest α is kept.
func TestChoose(t *testing.T) {
	c := func(a, lcb float64, sat bool) Candidate {
		return Candidate{Alpha: a, Cross: CrossFit{Criterion: lcb}, Saturated: sat}
	}
	cases := []struct {
		cs   []Candidate
		want int
	}{
		{[]Candidate{c(0.1, 0.5, false), c(1, 0.6, false), c(10, 0.9, true)}, 1},
		{[]Candidate{c(0.1, 0.6, false), c(1, 0.6, false), c(10, 0.6, true)}, 1},
		{[]Candidate{c(0.1, 0.7, false), c(1, 0.6, false)}, 0},
		{[]Candidate{c(3, 0.1, true), c(1, 0.2, true), c(10, 0.3, true)}, 1},
	}
	for i, tc := range cases {
		if got := choose(tc.cs); got != tc.want {
			t.Errorf("case %d: chose %d, want %d", i, got, tc.want)
		}
	}
}
