package schemas

import (
	"slices"
	"testing"
)

func TestCandidates(t *testing.T) {
	var m Mapping
	if got, want := m.Candidates(Propensity), []string{"propensity", "pscore", "propensity_score", "action_prob"}; !slices.Equal(got, want) {
		t.Errorf("default propensity candidates = %v, want %v", got, want)
	}
	if got, want := m.Candidates(Step), []string{"step", "t", "timestep"}; !slices.Equal(got, want) {
		t.Errorf("default step candidates = %v, want %v", got, want)
	}
	if got, want := m.Candidates(Terminal), []string{"terminal", "done", "is_last"}; !slices.Equal(got, want) {
		t.Errorf("default terminal candidates = %v, want %v", got, want)
	}
	m.Propensity = "p"
	if got := m.Candidates(Propensity); !slices.Equal(got, []string{"p"}) {
		t.Errorf("mapped propensity candidates = %v, want [p]", got)
	}
}

func TestValidate(t *testing.T) {
	if err := (Mapping{Episode: "id", Step: "h"}).Validate(); err != nil {
		t.Errorf("distinct names: %v", err)
	}
	if err := (Mapping{Observation: "x", Action: "x"}).Validate(); err == nil {
		t.Error("same column for observation and action: no error")
	}
	if err := (Mapping{Observation: "action"}).Validate(); err == nil {
		t.Error("observation mapped to the default action column: no error")
	}
	if err := (Mapping{Observation: "action", Action: "act"}).Validate(); err != nil {
		t.Errorf("observation from the action column, action elsewhere: %v", err)
	}
}

func TestRoleOrder(t *testing.T) {
	for r := Role(0); r < NumRoles; r++ {
		if Columns[r].Role != r {
			t.Errorf("Columns[%d].Role = %d", r, Columns[r].Role)
		}
	}
}
