package main

import (
	"fmt"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/psrlcb/psrlcb/internal/fitflag"
)

// sharedFlag is one fitflag option as the test compares it: name, usage
// and default value printed with %v.
type sharedFlag struct{ name, usage, value string }

func shared[T any](f fitflag.Flag[T]) sharedFlag {
	return sharedFlag{f.Name, f.Usage, fmt.Sprint(f.Value)}
}

// TestFitUsesSharedFlags: every option psrlcb fit shares with
// psrlcb-beam (internal/fitflag) is defined by fit with the shared help
// text and default, so the two commands say and default the same.
// psrlcb-beam's TestHelpStatesDefaults checks its side.
func TestFitUsesSharedFlags(t *testing.T) {
	want := []sharedFlag{
		shared(fitflag.Rank), shared(fitflag.MaxRank), shared(fitflag.Dynamics), shared(fitflag.Restarts),
		shared(fitflag.MaxIter), shared(fitflag.Tol), shared(fitflag.Lambda), shared(fitflag.SelectHeldOut),
		shared(fitflag.PlanBudget), shared(fitflag.Planner), shared(fitflag.PlanPoints), shared(fitflag.PlanRows), shared(fitflag.HullBound),
		shared(fitflag.Seed), shared(fitflag.Horizon), shared(fitflag.OnInvalid),
	}
	got := map[string]sharedFlag{}
	for _, f := range newFitCommand().Flags {
		name := f.Names()[0]
		df, ok := f.(cli.DocGenerationFlag)
		if !ok {
			t.Fatalf("--%s: no usage to compare", name)
		}
		value := df.GetValue()
		if _, isBool := f.(*cli.BoolFlag); isBool && value == "" {
			value = "false" // urfave prints no default for a bool flag
		} else if value == "" {
			value = "0" // urfave prints no default for a numeric zero
		}
		got[name] = sharedFlag{name, df.GetUsage(), value}
	}
	for _, w := range want {
		g, ok := got[w.name]
		switch {
		case !ok:
			t.Errorf("fit has no --%s", w.name)
		case g.usage != w.usage:
			t.Errorf("--%s: fit's help %q, the shared one %q", w.name, g.usage, w.usage)
		case g.value != w.value && !(g.value == "0" && w.value == ""):
			t.Errorf("--%s: fit's default %q, the shared one %q", w.name, g.value, w.value)
		}
	}
}
