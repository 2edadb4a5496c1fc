package ingest

import (
	"slices"
	"testing"
)

// TestLimitObservations: the n most frequent observations stay (ties to
// the bytewise smaller symbol), the rest become OtherSymbol, EndSymbol is
// kept outside n, the mapping is listed and the input is untouched.
func TestLimitObservations(t *testing.T) {
	vocab := []string{"<end>", "a", "b", "c", "d"}
	// counts: <end> 1, a 1, b 3, c 2, d 2 (c and d tie; c wins).
	obs := []uint16{2, 2, 2, 3, 3, 4, 4, 1, 0, 2}
	d := &Dataset{Horizon: 2, ObsVocab: vocab, ActVocab: []string{"x"}, Obs: obs,
		Act: make([]uint16, len(obs)), Reward: make([]float64, len(obs))}
	got := LimitObservations(d, 2)
	wantVocab := []string{"<end>", "<other>", "b", "c"}
	if !slices.Equal(got.ObsVocab, wantVocab) {
		t.Fatalf("vocabulary %q, want %q", got.ObsVocab, wantVocab)
	}
	// a→<other>(1), b→2, c→3, d→<other>(1), <end>→0.
	wantObs := []uint16{2, 2, 2, 3, 3, 1, 1, 1, 0, 2}
	if !slices.Equal(got.Obs, wantObs) {
		t.Fatalf("codes %v, want %v", got.Obs, wantObs)
	}
	wantMerged := []MergedSymbol{{"d", 2}, {"a", 1}}
	if !slices.Equal(got.Merged, wantMerged) {
		t.Fatalf("merged %v, want %v", got.Merged, wantMerged)
	}
	if !slices.Equal(d.Obs, obs) || !slices.Equal(d.ObsVocab, vocab) || d.Merged != nil {
		t.Fatal("input dataset modified")
	}
	if LimitObservations(d, 4) != d || LimitObservations(d, 0) != d {
		t.Fatal("a limit at or above |O| must return the dataset unchanged")
	}
}
