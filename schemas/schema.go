package schemas

import (
	"fmt"
	"slices"
)

// Role is the meaning of a column in the trajectory logs.
type Role int

// The columns of a trajectory log.
const (
	Episode Role = iota
	Step
	Observation
	Action
	Reward
	Propensity
	Terminal
	NumRoles
)

// Kind is a family of Parquet types a column may have.
type Kind uint8

// Kinds of column values.
const (
	KindInt    Kind = 1 << iota // INT32 or INT64 physical type
	KindString                  // BYTE_ARRAY (string or binary)
	KindFloat                   // FLOAT or DOUBLE, or an integer/decimal for numeric columns
	KindBool                    // BOOLEAN
)

// String names the kind for messages.
func (k Kind) String() string {
	switch k {
	case KindInt:
		return "integer"
	case KindString:
		return "string"
	case KindFloat:
		return "floating point"
	case KindBool:
		return "boolean"
	}
	s := ""
	for _, c := range []Kind{KindInt, KindString, KindFloat, KindBool} {
		if k&c != 0 {
			if s != "" {
				s += " or "
			}
			s += c.String()
		}
	}
	return s
}

// Column is the specification of one log column.
type Column struct {
	Role     Role
	Name     string   // default name
	Aliases  []string // other names accepted when the user gives none
	Kinds    Kind     // accepted kinds
	Required bool
	Meaning  string
}

// Columns lists the log schema in Role order.
var Columns = [NumRoles]Column{
	{Episode, "episode_id", nil, KindInt | KindString, true, "groups rows into episodes"},
	{Step, "step", []string{"t", "timestep"}, KindInt, true, "1-based time index h within the episode"},
	{Observation, "observation", nil, KindInt | KindString, true, "o_h, a categorical symbol"},
	{Action, "action", nil, KindInt | KindString, true, "a_h, a categorical symbol"},
	{Reward, "reward", nil, KindFloat, true, "r_h received after taking a_h"},
	{Propensity, "propensity", []string{"pscore", "propensity_score", "action_prob"}, KindFloat, false, "π^b(a_h | τ_{h-1}, o_h) as logged, in (0,1]"},
	{Terminal, "terminal", []string{"done", "is_last"}, KindBool, false, "true on the last step of an episode that ended early"},
}

// String is the default column name of the role.
func (r Role) String() string {
	if r < 0 || r >= NumRoles {
		return fmt.Sprintf("Role(%d)", int(r))
	}
	return Columns[r].Name
}

// Mapping names the user's columns. An empty field means the default name
// and its aliases; a non-empty field is the only name accepted for it.
type Mapping struct {
	Episode     string
	Step        string
	Observation string
	Action      string
	Reward      string
	Propensity  string
	Terminal    string
}

// Name returns the user's name for the role ("" when unset).
func (m Mapping) Name(r Role) string {
	switch r {
	case Episode:
		return m.Episode
	case Step:
		return m.Step
	case Observation:
		return m.Observation
	case Action:
		return m.Action
	case Reward:
		return m.Reward
	case Propensity:
		return m.Propensity
	case Terminal:
		return m.Terminal
	}
	return ""
}

// Candidates lists the column names accepted for the role, in order of
// preference.
func (m Mapping) Candidates(r Role) []string {
	if n := m.Name(r); n != "" {
		return []string{n}
	}
	c := Columns[r]
	return append([]string{c.Name}, c.Aliases...)
}

// Validate reports a mapping in which one column name could serve two
// roles: a name given for one role that is also given, or is a default
// name or alias, for another role left unset.
func (m Mapping) Validate() error {
	for r := Role(0); r < NumRoles; r++ {
		n := m.Name(r)
		if n == "" {
			continue
		}
		for o := Role(0); o < NumRoles; o++ {
			if o != r && slices.Contains(m.Candidates(o), n) {
				a, b := min(r, o), max(r, o)
				return fmt.Errorf("column %q is mapped to both %s and %s", n, a, b)
			}
		}
	}
	return nil
}
