// Package ingest reads trajectory logs (Parquet, the schema of package
// schemas and docs/design.md, section 3) into a validated, compact Dataset: K
// episodes of exactly H steps, observations and actions as uint16 codes
// into sorted vocabularies, rewards and logged propensities
// π^b(a_h | τ_{h-1}, o_h) as float64. This is the data D of the paper's
// offline setting (Section 5, Algorithm 2) that split, estimate and
// pessimism consume.
//
// Invariants of a Dataset returned by Read:
//   - episodes are sorted by episode_id (integer ids numerically, string ids
//     bytewise) and vocabularies bytewise, so the codes and the episode
//     order depend only on the set of rows, never on file order, row order,
//     row-group layout or worker count;
//   - every episode has steps 1..L with no duplicate and no gap, L ≤ H; an
//     episode with L < H ended early (terminal on step L) and is padded with
//     EndSymbol observations and actions, propensity 1 and reward 0;
//   - rewards are finite and propensities in (0,1]; Propensity is nil when
//     the logs carry none;
//   - no episode is dropped silently: under OnInvalid "skip" each invalid
//     episode is listed in Quarantined with its reason.
//
// Reading is column by column, page by page (parquet-go's low-level pages):
// dictionary pages are mapped to codes once per row group, plain pages are
// decoded without allocating per row, and row groups are read in parallel.
// Memory is proportional to the compact dataset (about 30 bytes per row
// while reading, 20 bytes per cell after).
//
// Errors: every data error matches ErrInvalid and one class sentinel
// (ErrDuplicateStep, ErrStepGap, ...); EpisodeError and FileError carry the
// file, episode and step. Failures to read a file match ErrIO. A damaged
// file yields ErrUnreadable, never a panic.
//
// Summarize computes the figures `psrlcb inspect` prints from a Dataset;
// ReadSummary reads the logs and computes the same figures without
// keeping what they do not need (the propensities per step, the episode
// ids as text), which is what inspect calls.
package ingest
