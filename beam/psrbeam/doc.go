// Package psrbeam runs the stages of psrlcb whose cost grows with the
// number of episodes K as Apache Beam pipelines (Go SDK), so that logs
// larger than one machine can be fitted on Flink, Spark or Dataflow, or
// locally on Beam's in-process Prism runner. The driver — the process that
// calls pipeline.Run — keeps everything model-sized: the M-step, the SQUAREM
// extrapolation, the restarts and the rank choice of estimate.Fit
// (Huang, Liang, Yang, arXiv:2307.00405, Section 5: the MLE oracle of
// PSR-LCB, Algorithm 2), and the later stages.
//
// Runner.Ingest reads and validates the logs as a pipeline: row groups
// read by workers with parquet-go (ingest.ReadRowGroup), rows grouped by
// episode across files, each episode checked by ingest.CheckEpisode, the
// result merged on the driver (ingest.Merge) — ingest.Read's dataset,
// errors and quarantine, computed in pieces.
//
// Runner is an estimate.EStepper: each E-step pass is one pipeline whose
// main input is the episode shards (compact codes written once per set of
// episodes), whose side input is the current model, and whose CombineFn
// sums the per-shard sufficient statistics and log-likelihood computed by
// estimate.EStep.Block — the same forward–backward kernels as the local
// fit, so the fitted model agrees with the local one to rounding (the sums
// are added in the runner's order, not block order).
//
// This package lives in its own Go module (github.com/psrlcb/psrlcb/beam)
// so that the Beam SDK and its dependencies are built only by those who
// run on Beam; see docs/scale-out.md.
package psrbeam
