package report

import "github.com/psrlcb/psrlcb/arrowio"

// Table and Column are the Arrow tables the report writes (package arrowio).
type (
	Table  = arrowio.Table
	Column = arrowio.Column
)
