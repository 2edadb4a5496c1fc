// Command gen-ingest writes the synthetic logs of the ingest benchmark:
//
//	go run ./bench/gen-ingest -out /tmp/psrlcb-bench/ingest-10M.parquet
//
// 1,000,000 episodes × 10 steps, 8 observation and 4 action string symbols,
// 10 row groups, zstd (see package ingest/synth).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/psrlcb/psrlcb/ingest/synth"
)

func main() {
	out := flag.String("out", filepath.Join(os.TempDir(), "psrlcb-bench", "ingest-10M.parquet"), "output file")
	episodes := flag.Int("episodes", 1_000_000, "number of episodes")
	horizon := flag.Int("horizon", 10, "steps per episode")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if err := generate(*out, synth.Options{Episodes: *episodes, Horizon: *horizon, Seed: *seed}); err != nil {
		fmt.Fprintln(os.Stderr, "gen-ingest:", err)
		os.Exit(4)
	}
}

// generate writes the synthetic logs of o to out, through a temporary
// file beside it, creating its directory.
func generate(out string, o synth.Options) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := synth.Write(tmp, o); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, out)
}
