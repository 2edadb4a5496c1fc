package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/psrlcb/psrlcb/estimate"
)

// TestRankNoteGrowth: the rank note names the growth on all the logs
// when the table has its rows (trained on more episodes than the
// search's: the smaller rank in one or both forms, then the larger
// rank), with the form grown when both were fitted and the per-episode
// held-out gain of the larger rank when it was chosen, and says nothing
// of it otherwise.
func TestRankNoteGrowth(t *testing.T) {
	sample := []estimate.RankRow{
		{Rank: 1, HeldOutLogLik: -300, Form: "full", Episodes: 160, HeldOutEpisodes: 40},
		{Rank: 2, HeldOutLogLik: -310, Form: "full", Episodes: 160, HeldOutEpisodes: 40},
	}
	won := append(append([]estimate.RankRow(nil), sample...),
		estimate.RankRow{Rank: 1, HeldOutLogLik: -1500, Form: "full", Episodes: 800, HeldOutEpisodes: 200},
		estimate.RankRow{Rank: 2, HeldOutLogLik: -1450, Form: "full", Episodes: 800, HeldOutEpisodes: 200, Chosen: true})
	n := rankNote(won, false)
	for _, want := range []string{"r = 2 was chosen among 1 to 2", "Rank 2 lost to rank 1 on the search's sample", "800 training episodes, 200 held out", "rank 2 won, by 0.25 nats per held-out episode"} {
		if !strings.Contains(n, want) {
			t.Errorf("note %q lacks %q", n, want)
		}
	}
	lost := append([]estimate.RankRow(nil), won...)
	lost[3].Chosen, lost[3].HeldOutLogLik = false, -1501
	lost[0].Chosen = true
	if n := rankNote(lost, false); !strings.Contains(n, "r = 1 was chosen") || !strings.Contains(n, "rank 2 did not win there") {
		t.Errorf("growth lost: note %q", n)
	}
	// Rank 1 fitted in both forms on all the logs: the compact one,
	// better by 20 nats on 200 held-out episodes, is grown and beaten by
	// 30 nats.
	forms := append(append([]estimate.RankRow(nil), won[:3]...),
		estimate.RankRow{Rank: 1, HeldOutLogLik: -1480, Form: "compact", Episodes: 800, HeldOutEpisodes: 200},
		estimate.RankRow{Rank: 2, HeldOutLogLik: -1450, Form: "compact", Episodes: 800, HeldOutEpisodes: 200, Chosen: true})
	n = rankNote(forms, false)
	for _, want := range []string{"rank 1 in both model forms, of which the compact form predicted the held-out episodes better (by 0.1 nats per episode)", "rank 2 won, by 0.15 nats per held-out episode"} {
		if !strings.Contains(n, want) {
			t.Errorf("note %q lacks %q", n, want)
		}
	}
	sample[0].Chosen = true
	if n := rankNote(sample, false); strings.Contains(n, "all the logs") {
		t.Errorf("no growth: note %q mentions it", n)
	}
}

// TestRankGroups: the rank plot draws one line per form and training
// set, in the order the sets first appear, each in increasing rank.
func TestRankGroups(t *testing.T) {
	rows := []RankRow{
		{Rank: 4, Form: "full", Episodes: 160}, {Rank: 1, Form: "full", Episodes: 160},
		{Rank: 2, Form: "full", Episodes: 800}, {Rank: 1, Form: "full", Episodes: 800},
		{Rank: 2, Form: "full", Episodes: 160},
	}
	gs := rankGroups(rows)
	if len(gs) != 2 {
		t.Fatalf("%d groups, want 2: %+v", len(gs), gs)
	}
	for i, want := range [][]int{{1, 2, 4}, {1, 2}} {
		var got []int
		for _, r := range gs[i].rows {
			got = append(got, r.Rank)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || !strings.Contains(gs[i].label, fmt.Sprint([]int{160, 800}[i])) {
			t.Errorf("group %d %q: ranks %v, want %v", i, gs[i].label, got, want)
		}
	}
}
