// Package pipeline runs psrlcb's whole fit from Go: ingest → split →
// estimate → pessimism → policy → report, the PSR-LCB algorithm
// (Algorithm 2, Section 5) of Huang, Liang, Yang, "Provably Efficient
// UCB-type Algorithms For Learning Predictive State Representations",
// ICLR 2024, arXiv:2307.00405.
//
// Run reads Parquet logs and returns every result in memory; Fit does the
// same for a dataset already read; report.WriteOutcome writes the output
// files (into a directory staged with internal/outdir by the command
// line). The command `psrlcb fit` is a thin layer over Run:
//
//	res, err := pipeline.Run(ctx, []string{"logs/part-0.parquet"}, pipeline.Options{Seed: 1})
//	// res.Policy, res.Model, res.Run.Manifest.Headline ...
//
// With the rank automatic, the rank is searched once (estimate.ChooseRank)
// and every later fit starts once from the search's model. With several α
// candidates, the episodes are cut into parts A and B (B the share
// SelectHeldOut, each part at most SelectMaxEpisodes), a model is fitted
// on each, and policy.Select plans every candidate with A's model and
// values it under B's; the final model is then fitted on all episodes from
// A's model, and the reported bound is corrected as LCBCorrection says.
// When the search's growth left other models of its rank
// (estimate.RankChoice.Alternatives), the selection runs from each, and
// the one whose chosen plan has the highest cross-fitted value is kept.
//
// Options' zero value is the documented default of every stage. Every
// option is checked before any input is read (errors match ErrOptions and
// errkind.Options). The run id in the manifest hashes the inputs and every
// resolved option, ingest options included, so the same logs, options and
// seed give the same run id and byte-identical tables whatever
// Options.Workers is.
//
// Before any fitting, the logs are checked against what the method needs
// (errors match errkind.Data and say which episode and how many are
// needed): at least H episodes, one per subset D_h of the split (ErrTooFew,
// also for a held-out share that leaves too few to fit), rewards within
// ±MaxAbsReward and returns whose spread double precision resolves
// (ErrReward). Returns are rescaled to the paper's [0,1] by the range of
// returns the model can produce, H times the smallest and largest logged
// reward, or by Options.ReturnRange when the user knows it.
package pipeline
