package pomdp

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// sharedDir is ../shared beside the repository root, where published
// models live; tests that need it skip when it is absent.
func sharedDir(t testing.TB) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	dir := filepath.Join(root, "..", "shared", "pomdp")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("published models not available (%s absent): %v", dir, err)
	}
	return dir
}

func mustParse(t *testing.T, text string) *POMDP {
	t.Helper()
	m, err := Parse(strings.NewReader(text), "test.pomdp")
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, text)
	}
	return m
}

const tol = 1e-12

func near(a, b float64) bool { return math.Abs(a-b) <= tol }

func TestParseSharedModels(t *testing.T) {
	dir := sharedDir(t)
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no models in %s: %v", dir, err)
	}
	// Sizes as declared in each file's preamble.
	want := map[string][3]int{
		"1d.noisy.pomdp":   {4, 2, 2},
		"4x3.95.POMDP":     {11, 4, 6},
		"cheese.95.POMDP":  {11, 4, 7},
		"hallway.pomdp":    {60, 5, 21},
		"mini-hall2.pomdp": {13, 3, 9},
		"paint.95.pomdp":   {4, 4, 2},
		"parr95.95.POMDP":  {7, 3, 6},
		"query.s2.pomdp":   {9, 2, 3},
		"shuttle.95.POMDP": {8, 3, 5},
		"tiger.95.POMDP":   {2, 3, 2},
	}
	for _, f := range files {
		m, err := ParseFile(f)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if w, ok := want[filepath.Base(f)]; ok {
			got := [3]int{m.NumStates(), m.NumActions(), m.NumObs()}
			if got != w {
				t.Errorf("%s: sizes %v, want %v", f, got, w)
			}
		}
		if err := m.Check(); err != nil {
			t.Errorf("%s: Check: %v", f, err)
		}
	}
}

func TestParsePublishedTigerValues(t *testing.T) {
	dir := sharedDir(t)
	m, err := ParseFile(filepath.Join(dir, "tiger.95.POMDP"))
	if err != nil {
		t.Fatal(err)
	}
	listen, openL := 0, 1
	if !near(m.O[listen][0][0], 0.85) || !near(m.O[listen][1][0], 0.15) {
		t.Errorf("O listen = %v", m.O[listen])
	}
	if !near(m.R(openL, 0, 1, 1), -100) || !near(m.R(openL, 1, 0, 0), 10) || !near(m.R(listen, 1, 1, 0), -1) {
		t.Errorf("rewards wrong")
	}
	if !near(m.T[openL][0][1], 0.5) || !near(m.T[listen][1][1], 1) || m.T[listen][1][0] != 0 {
		t.Errorf("T wrong: %v", m.T)
	}
	if !near(m.Discount, 0.95) {
		t.Errorf("discount %v", m.Discount)
	}
}

// header declares 3 states, 2 actions, 2 observations with names.
const header = `discount: 0.9
values: reward
states: s0 s1 s2
actions: a0 a1
observations: o0 o1
`

// fill gives every row a valid default so a test can override one part.
const fill = `T: * uniform
O: * uniform
`

func TestParseTransitionForms(t *testing.T) {
	cases := []struct {
		name string
		body string
		a, s int
		want []float64
	}{
		{"matrix", "T: a1\n0.1 0.2 0.7\n0 1 0\n1 0 0\n", 1, 0, []float64{0.1, 0.2, 0.7}},
		{"matrix-last-row", "T: a1\n0.1 0.2 0.7\n0 1 0\n1 0 0\n", 1, 2, []float64{1, 0, 0}},
		{"identity", "T: a0 identity\n", 0, 1, []float64{0, 1, 0}},
		{"uniform", "T: a0\nidentity\nT: a0 uniform\n", 0, 1, []float64{1. / 3, 1. / 3, 1. / 3}},
		{"row", "T: a0 : s2\n0.5 0.25 0.25\n", 0, 2, []float64{0.5, 0.25, 0.25}},
		{"row-uniform", "T: a0 identity\nT: a0 : s1 uniform\n", 0, 1, []float64{1. / 3, 1. / 3, 1. / 3}},
		{"row-reset", "T: a0 identity\nT: a0 : s1 reset\n", 0, 1, []float64{0.2, 0.3, 0.5}},
		{"matrix-reset-then-entry", "T: a0 : s1 reset\nT: a0 : s1 : s0 0.0\nT: a0 : s1 : s2 0.7\n", 0, 1, []float64{0, 0.3, 0.7}},
		{"single", "T: a0 identity\nT: a0 : s0 : s0 0.4\nT: a0 : s0 : s2 0.6\n", 0, 0, []float64{0.4, 0, 0.6}},
		{"wild-action-matrix", "T: * identity\n", 1, 2, []float64{0, 0, 1}},
		{"wild-action-row", "T: * : s0\n0 0 1\n", 1, 0, []float64{0, 0, 1}},
		{"wild-start", "T: a1 : *\n0 1 0\n", 1, 2, []float64{0, 1, 0}},
		{"wild-end", "T: a1 : s0 : * 0.0\nT: a1 : s0 : s1 1.0\n", 1, 0, []float64{0, 1, 0}},
		{"wild-all", "T: * : * : * 0.0\nT: * : * : s2 1.0\n", 0, 1, []float64{0, 0, 1}},
		{"override", "T: a0 : s1\n1 0 0\nT: a0 : s1\n0 0 1\n", 0, 1, []float64{0, 0, 1}},
		{"numbers-for-named", "T: 1 : 2\n0 1 0\n", 1, 2, []float64{0, 1, 0}},
		{"no-space", "T:a0:s0:s1 1.0\nT:a0:s0:s0 0.0\nT:a0:s0:s2 0\n", 0, 0, []float64{0, 1, 0}},
		{"values-on-following-lines", "T\n:\na0\n:\ns0\n0.5\n0.5\n0\n", 0, 0, []float64{0.5, 0.5, 0}},
		{"comments", "T: a0 : s0 # a comment\n# full line\n0.5 0.5 0 # trailing\n", 0, 0, []float64{0.5, 0.5, 0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// The start distribution is used by "reset" rows.
			m := mustParse(t, header+"start: 0.2 0.3 0.5\n"+fill+c.body)
			got := m.T[c.a][c.s]
			for i := range c.want {
				if !near(got[i], c.want[i]) {
					t.Fatalf("T[%d][%d] = %v, want %v", c.a, c.s, got, c.want)
				}
			}
		})
	}
}

func TestParseObservationForms(t *testing.T) {
	cases := []struct {
		name string
		body string
		a, s int
		want []float64
	}{
		{"matrix", "O: a1\n1 0\n0.3 0.7\n0 1\n", 1, 1, []float64{0.3, 0.7}},
		{"uniform", "O: a1\n1 0\n1 0\n1 0\nO: a1 uniform\n", 1, 0, []float64{0.5, 0.5}},
		{"row", "O: a0 : s2\n0.9 0.1\n", 0, 2, []float64{0.9, 0.1}},
		{"row-uniform", "O: a0 : s2\n1 0\nO: a0 : s2 uniform\n", 0, 2, []float64{0.5, 0.5}},
		{"single", "O: a0 : s1 : o0 0.25\nO: a0 : s1 : o1 0.75\n", 0, 1, []float64{0.25, 0.75}},
		{"wild-action", "O: * : s1\n0 1\n", 1, 1, []float64{0, 1}},
		{"wild-state", "O: a0 : *\n0 1\n", 0, 2, []float64{0, 1}},
		{"wild-obs", "O: a0 : s0 : * 0.5\n", 0, 0, []float64{0.5, 0.5}},
		{"wild-all-matrix", "O: *\n0 1\n0 1\n1 0\n", 1, 2, []float64{1, 0}},
		{"override", "O: * : * : o0 1.0\nO: * : * : o1 0.0\nO: a1 : s0 : o0 0.0\nO: a1 : s0 : o1 1.0\n", 1, 0, []float64{0, 1}},
		{"no-space", "O:*:s1:o1 0.5\nO:*:s1:o0 0.5\n", 1, 1, []float64{0.5, 0.5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mustParse(t, header+fill+c.body)
			got := m.O[c.a][c.s]
			for i := range c.want {
				if !near(got[i], c.want[i]) {
					t.Fatalf("O[%d][%d] = %v, want %v", c.a, c.s, got, c.want)
				}
			}
		})
	}
}

func TestParseRewardForms(t *testing.T) {
	type at struct {
		a, s, s2, o int
		want        float64
	}
	cases := []struct {
		name   string
		body   string
		checks []at
	}{
		{"single", "R: a1 : s2 : s0 : o1 -3.5\n", []at{{1, 2, 0, 1, -3.5}, {1, 2, 0, 0, 0}}},
		{"row", "R: a1 : s2 : s0\n4 5\n", []at{{1, 2, 0, 0, 4}, {1, 2, 0, 1, 5}, {1, 2, 1, 1, 0}}},
		{"matrix", "R: a0 : s1\n1 2\n3 4\n5 6\n", []at{{0, 1, 0, 1, 2}, {0, 1, 2, 0, 5}, {0, 0, 2, 0, 0}}},
		{"wild-action", "R: * : s0 : s0 : o0 7\n", []at{{0, 0, 0, 0, 7}, {1, 0, 0, 0, 7}, {1, 1, 0, 0, 0}}},
		{"wild-start", "R: a0 : * : s1 : o1 2\n", []at{{0, 0, 1, 1, 2}, {0, 2, 1, 1, 2}, {0, 2, 2, 1, 0}}},
		{"wild-end", "R: a0 : s1 : * : o1 2\n", []at{{0, 1, 0, 1, 2}, {0, 1, 2, 1, 2}, {0, 1, 2, 0, 0}}},
		{"wild-obs", "R: a0 : s1 : s1 : * 2\n", []at{{0, 1, 1, 0, 2}, {0, 1, 1, 1, 2}}},
		{"wild-all", "R: * : * : * : * -1\nR: a1 : s2 : * : * 10\n", []at{{0, 0, 0, 0, -1}, {1, 2, 1, 1, 10}, {1, 1, 1, 1, -1}}},
		{"wild-row", "R: * : * : s2\n8 9\n", []at{{1, 0, 2, 1, 9}, {0, 2, 2, 0, 8}}},
		{"wild-matrix", "R: a1 : *\n1 2\n3 4\n5 6\n", []at{{1, 0, 1, 0, 3}, {1, 2, 2, 1, 6}}},
		{"override", "R: a0 : s0 : s0 : o0 1\nR: a0 : s0 : s0 : o0 2\n", []at{{0, 0, 0, 0, 2}}},
		{"no-space", "R:a0:s0:s0:o0 1.5\n", []at{{0, 0, 0, 0, 1.5}}},
		{"value-next-line", "R: a0 : s0 : s0 : o0\n1.5\n", []at{{0, 0, 0, 0, 1.5}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mustParse(t, header+fill+c.body)
			for _, k := range c.checks {
				if got := m.R(k.a, k.s, k.s2, k.o); !near(got, k.want) {
					t.Errorf("R(%d,%d,%d,%d) = %v, want %v", k.a, k.s, k.s2, k.o, got, k.want)
				}
			}
		})
	}
}

func TestParseCostIsNegated(t *testing.T) {
	m := mustParse(t, strings.Replace(header, "values: reward", "values: cost", 1)+fill+"R: a0 : s0 : s0 : o0 3\n")
	if got := m.R(0, 0, 0, 0); got != -3 {
		t.Fatalf("cost 3 read as reward %v, want -3", got)
	}
}

func TestParseStartForms(t *testing.T) {
	cases := []struct {
		name, start string
		want        []float64
	}{
		{"default-uniform", "", []float64{1. / 3, 1. / 3, 1. / 3}},
		{"vector", "start: 0.2 0.3 0.5\n", []float64{0.2, 0.3, 0.5}},
		{"vector-next-line", "start:\n0.2\n0.3 0.5\n", []float64{0.2, 0.3, 0.5}},
		{"uniform", "start: uniform\n", []float64{1. / 3, 1. / 3, 1. / 3}},
		{"name", "start: s1\n", []float64{0, 1, 0}},
		{"number", "start: 2\n", []float64{0, 0, 1}},
		{"include", "start include: s0 s2\n", []float64{0.5, 0, 0.5}},
		{"exclude", "start exclude: s0\n", []float64{0, 0.5, 0.5}},
		{"exclude-number", "start exclude: 1\n", []float64{0.5, 0, 0.5}},
		{"renormalised", "start: 0.333333 0.333333 0.333333\n", []float64{1. / 3, 1. / 3, 1. / 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := mustParse(t, header+c.start+fill)
			for i := range c.want {
				if math.Abs(m.Start[i]-c.want[i]) > 1e-15 {
					t.Fatalf("start = %v, want %v", m.Start, c.want)
				}
			}
		})
	}
}

func TestParseCountsNameElements(t *testing.T) {
	m := mustParse(t, "states: 3\nactions:2\nobservations :\n4\nT: 1 : 2 : 0 1.0\nT: 1 : 2 : 2 0.0\nT: * identity\nO: * uniform\nR: 1 : 2 : 0 : 3 5\n")
	if strings.Join(m.States, ",") != "0,1,2" || strings.Join(m.Actions, ",") != "0,1" || strings.Join(m.Observations, ",") != "0,1,2,3" {
		t.Fatalf("names %v %v %v", m.States, m.Actions, m.Observations)
	}
	// "T: * identity" came later and overrides the single entries.
	if m.T[1][2][2] != 1 || m.T[1][2][0] != 0 {
		t.Errorf("later entry did not override: %v", m.T[1][2])
	}
	if m.R(1, 2, 0, 3) != 5 || m.Discount != 1 {
		t.Errorf("R or default discount wrong")
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, text string
		sentinel   error
		want       string // substring of the message, with the line number
	}{
		{"row-sum", header + fill + "T: a0 : s1\n0.5 0.4 0\n", ErrInvalid, "test.pomdp:9: T: a0 : s1"},
		{"row-sum-single", header + fill + "\nO: a1 : s2 : o0 0.3\n", ErrInvalid, "test.pomdp:9: O: a1 : s2"},
		{"missing-row", header + "O: * uniform\nT: a0 identity\n", ErrInvalid, "no T: entry"},
		{"start-sum", header + "start: 0.5 0.4 0\n" + fill, ErrInvalid, "test.pomdp:6: start"},
		{"unknown-state", header + fill + "T: a0 : s9 : s0 1.0\n", ErrSyntax, "test.pomdp:8: unknown state \"s9\""},
		{"unknown-action", header + fill + "\n\nR: jump : * : * : * 1\n", ErrSyntax, "test.pomdp:10: unknown action \"jump\""},
		{"unknown-obs", header + fill + "O: a0 : s0 : o7 1.0\n", ErrSyntax, "test.pomdp:8: unknown observation \"o7\""},
		{"index-out-of-range", header + fill + "T: 2 identity\n", ErrSyntax, "test.pomdp:8: action number 2 is out of range"},
		{"truncated-matrix", header + fill + "T: a0\n1 0 0\n0 1 0\n0 0\nO: a0 uniform\n", ErrSyntax, "test.pomdp:12: T matrix (from line 8): expected 9 numbers, found 8 before \"O\""},
		{"truncated-eof", header + fill + "O: a0\n1 0\n0 1\n", ErrSyntax, "test.pomdp:10: O matrix (from line 8): expected 6 numbers, found 4 before end of file"},
		{"extra-number", header + fill + "T: a0 : s0\n1 0 0 0\n", ErrSyntax, "test.pomdp:9: unexpected \"0\""},
		{"prob-out-of-range", header + fill + "T: a0 : s0 : s0 1.5\n", ErrSyntax, "test.pomdp:8: probability 1.5"},
		{"negative-prob", header + fill + "O: a0 : s0\n1.1 -0.1\n", ErrSyntax, "test.pomdp:9: O row: probability 1.1"},
		{"bad-number", header + fill + "R: a0 : s0 : s0 : o0 1.2.3\n", ErrSyntax, "test.pomdp:8: \"1.2.3\" is not a number"},
		{"missing-colon", header + fill + "T a0 identity\n", ErrSyntax, "test.pomdp:8: expected ':' after \"T\""},
		{"bad-values", "values: money\n", ErrSyntax, "test.pomdp:1: values must be reward or cost"},
		{"no-states", "actions: a\nobservations: o\nT: a identity\n", ErrSyntax, "test.pomdp:3: states must be declared"},
		{"dup-name", "states: a b a\n", ErrSyntax, "test.pomdp:1: state \"a\" is listed twice"},
		{"numeric-name", "states: a 1b\n", ErrSyntax, "test.pomdp:1: \"1b\" is not a valid state name"},
		{"late-preamble", header + fill + "discount: 0.5\n", ErrSyntax, "test.pomdp:8: \"discount\" must come before"},
		{"identity-for-O", header + fill + "O: a0 identity\n", ErrSyntax, "test.pomdp:8: \"identity\" is not allowed"},
		{"reward-action-only", header + fill + "R: a0\n1 2\n", ErrSyntax, "test.pomdp:8: R: needs at least an action and a start state"},
		{"garbage", header + fill + "hello\n", ErrSyntax, "test.pomdp:8: unexpected \"hello\""},
		{"init-observation", "states: 1\nactions: 1\nobservations: init other\nT: * identity\nO: * uniform\n", ErrInvalid, "reserved"},
		{"empty", "", ErrSyntax, "states must be declared"},
		{"huge", "states: 100000\nactions: 100000\nobservations: 2\n", ErrSyntax, "too large"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(c.text), "test.pomdp")
			if err == nil {
				t.Fatalf("no error for\n%s", c.text)
			}
			if !errors.Is(err, c.sentinel) {
				t.Errorf("error %q does not wrap %v", err, c.sentinel)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not contain %q", err, c.want)
			}
		})
	}
}

func FuzzParse(f *testing.F) {
	f.Add(header + fill + "R: * : * : * : * 1\n")
	f.Add("states: 2\nactions: 1\nobservations: 1\nstart include: 0\nT: 0 : 0 reset\nT: 0 : 1 uniform\nO: * uniform\n")
	f.Add("T:a0:s0:s1 1.0 # x")
	f.Fuzz(func(t *testing.T, text string) {
		m, err := Parse(strings.NewReader(text), "fuzz")
		if err == nil {
			if err := m.Check(); err != nil {
				t.Fatalf("parsed model fails Check: %v", err)
			}
		}
	})
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

// A matrix row that does not sum to 1 is reported on its own line.
func TestParseRowErrorPointsAtRow(t *testing.T) {
	text := header + fill + "T: a1\n1 0 0\n0 1 0\n0.5 0 0.4\n"
	_, err := Parse(strings.NewReader(text), "test.pomdp")
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "test.pomdp:11: T: a1 : s2") {
		t.Fatalf("err = %v", err)
	}
	text = header + fill + "O: a1\n1 0\n0.5 0.4\n0 1\n"
	_, err = Parse(strings.NewReader(text), "test.pomdp")
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "test.pomdp:10: O: a1 : s1") {
		t.Fatalf("err = %v", err)
	}
}
