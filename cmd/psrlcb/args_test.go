package main

import (
	"slices"
	"testing"
)

// A bool flag between the files and a valued flag must not take the next
// flag as its value: `fit FILE --force --rank 4` is --force, then --rank 4.
func TestInterspersedBoolFlags(t *testing.T) {
	app := newApp()
	cases := []struct{ in, want []string }{
		{
			[]string{"psrlcb", "fit", "a.parquet", "--force", "--rank", "4", "--out", "d"},
			[]string{"psrlcb", "fit", "--force", "--rank", "4", "--out", "d", "--", "a.parquet"},
		},
		{
			[]string{"psrlcb", "fit", "--out", "d", "a.parquet", "b.parquet", "--json-progress=false", "--seed", "3"},
			[]string{"psrlcb", "fit", "--out", "d", "--json-progress=false", "--seed", "3", "--", "a.parquet", "b.parquet"},
		},
		{
			[]string{"psrlcb", "inspect", "a.parquet", "--json", "--horizon", "4"},
			[]string{"psrlcb", "inspect", "--json", "--horizon", "4", "--", "a.parquet"},
		},
		{
			[]string{"psrlcb", "fit", "a.parquet", "--", "--odd-name.parquet"},
			[]string{"psrlcb", "fit", "--", "a.parquet", "--odd-name.parquet"},
		},
	}
	for _, c := range cases {
		if got := interspersed(app, c.in); !slices.Equal(got, c.want) {
			t.Errorf("interspersed(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}
