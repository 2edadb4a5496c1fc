package main

import (
	"flag"
	"slices"
	"testing"
)

// TestInterspersed: flags after the log files parse as before them, with
// their values (boolean flags take none), and "--" still ends the flags.
func TestInterspersed(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  []string
		out  string
	}{
		{[]string{"logs.parquet", "--runner", "prism", "--out", "run"}, []string{"logs.parquet"}, "run"},
		{[]string{"--out", "run", "a.parquet", "--force", "b.parquet"}, []string{"a.parquet", "b.parquet"}, "run"},
		{[]string{"a.parquet", "--out=run", "--", "--odd-name.parquet"}, []string{"a.parquet", "--odd-name.parquet"}, "run"},
	} {
		fs := flag.NewFlagSet("fit", flag.ContinueOnError)
		c := registerFlags(fs)
		if err := fs.Parse(interspersed(fs, tc.args)); err != nil {
			t.Fatalf("%q: %v", tc.args, err)
		}
		if *c.out != tc.out || !slices.Equal(fs.Args(), tc.pos) {
			t.Errorf("%q: --out %q, files %q; want %q, %q", tc.args, *c.out, fs.Args(), tc.out, tc.pos)
		}
		if tc.args[0] == "logs.parquet" && *c.runner != "prism" {
			t.Errorf("%q: --runner %q", tc.args, *c.runner)
		}
	}
}
