// Package arrowio writes and reads the Arrow IPC files of psrlcb's output
// directory (policy.arrow, model.arrow, controller.arrow, coverage.arrow,
// episodes.arrow, fit.arrow and the others the report lists): tables of
// plain Go columns (Table, Column) that pyarrow, pandas, polars and the
// JavaScript reader open directly (the random-access "file" flavour,
// uncompressed, no dictionary columns).
//
// Entry points:
//
//   - WriteArrow writes a Table atomically (a temporary file renamed into
//     place after a successful close), with its schema metadata (the run
//     id, SchemaVersion and each table's own keys).
//   - WriteArrowBatches writes a table of millions of rows record batch by
//     record batch, so it is never held whole.
//   - ReadArrow reads a file back into one Table: how psrlcb reads its own
//     outputs (a model, a controller, a policy table to evaluate,
//     `psrlcb inspect DIR`) and how the tests check them.
//
// A Float64 value that is not finite (NaN, ±Inf) is written as a null and
// read back as NaN, so no reader meets a non-finite number. The columns
// of each output file are listed in the README ("What a run gives you");
// the controller's are in package schemas.
package arrowio
