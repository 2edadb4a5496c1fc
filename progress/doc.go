// Package progress reports the progress of a long run as it goes: the
// pipeline (package pipeline) calls a Reporter one stage at a time
// (ingest, rank, select-α, split, estimate, pessimism, policy, compare,
// report), with the stage's units of work when it knows them (bytes read,
// EM iterations, episodes), and for notable events.
//
// The implementations are chosen by where the output goes (psrlcb fit
// --log-format):
//
//   - NewText: a live progress bar per stage, with the count and the time
//     left when the stage knows its total, for a terminal.
//   - NewPlain: one human-readable line per stage and event, for a text
//     log that is not a terminal.
//   - NewJSON: one JSON object per event (structured logs for scheduled
//     jobs), progress thinned to one line per second per stage (the line
//     that reaches the stage's total always written), with seconds_left
//     extrapolated from the rate so far.
//   - Nop: nothing, the default of a library call.
//
// Every Reporter is safe for concurrent use.
package progress
