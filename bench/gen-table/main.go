// Command gen-table writes a context-free stochastic policy table
// (package schemas, "Policy tables") over the actions of a POMDP: the
// first action with probability --first, the others sharing the rest
// evenly, at every observation and step. bench/evaluate.sh evaluates it.
//
//	go run ./bench/gen-table --pomdp bench.pomdp --out table.parquet [--first 0.55]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/parquet-go/parquet-go"

	"github.com/psrlcb/psrlcb/pomdp"
)

type row struct {
	Observation string  `parquet:"observation"`
	Action      string  `parquet:"action"`
	Probability float64 `parquet:"probability"`
}

func main() {
	file := flag.String("pomdp", "", "POMDP file whose actions the table names")
	out := flag.String("out", "", "output Parquet file")
	first := flag.Float64("first", 0.55, "probability of the first action")
	flag.Parse()
	if err := run(*file, *out, *first); err != nil {
		fmt.Fprintln(os.Stderr, "gen-table:", err)
		os.Exit(1)
	}
}

func run(file, out string, first float64) error {
	m, err := pomdp.ParseFile(file)
	if err != nil {
		return err
	}
	A := m.NumActions()
	if out == "" || !(first >= 0 && first <= 1) || A < 2 {
		return fmt.Errorf("need --out, --first in [0,1] and at least two actions")
	}
	return parquet.WriteFile(out, firstRows(m, first))
}

// firstRows are the table's rows: probability first for the first action
// and the rest shared evenly by the others, in every observation.
func firstRows(m *pomdp.POMDP, first float64) []row {
	A := m.NumActions()
	rows := make([]row, A)
	for a := range A {
		p := (1 - first) / float64(A-1)
		if a == 0 {
			p = first
		}
		rows[a] = row{Observation: "*", Action: m.Actions[a], Probability: p}
	}
	return rows
}
