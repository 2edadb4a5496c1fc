package progress

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// JSON lines carry a total only when the stage knows its work, never
// "total":0.
func TestJSONTotals(t *testing.T) {
	var buf bytes.Buffer
	p := NewJSON(&buf).(*jsonProgress)
	p.StartStage("split", 0)
	p.EndStage("split", time.Millisecond)
	p.StartStage("estimate", 400)
	p.last = time.Time{} // let the next Advance through the one-per-second thinning
	p.Advance(100, "iter 1")
	p.EndStage("estimate", time.Second)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatal(err)
		}
		if tot, ok := m["total"]; ok && tot.(float64) == 0 {
			t.Errorf("total 0 in %s", l)
		}
	}
	var adv map[string]any
	_ = json.Unmarshal([]byte(lines[3]), &adv)
	if adv["total"] != 400.0 || adv["done"] != 100.0 {
		t.Errorf("progress line %v", adv)
	}
	if _, ok := adv["seconds_left"]; !ok {
		t.Errorf("no time left in %v", adv)
	}
	if strings.Contains(lines[0], "total") {
		t.Errorf("unknown total printed: %s", lines[0])
	}
}

// TestJSONReachedTotalIsWritten: within the one-per-second thinning, an
// advance that brings the stage to its total is still written, so the
// stage's last progress line is done = total with no time left; the
// advances between are thinned.
func TestJSONReachedTotalIsWritten(t *testing.T) {
	var buf bytes.Buffer
	p := NewJSON(&buf).(*jsonProgress)
	p.StartStage("policy", 1000)
	p.last = time.Time{}
	p.Advance(30, "30 nodes") // written: the thinning's second has passed
	p.Advance(10, "")         // thinned
	p.Advance(960, "")        // reaches the total: written
	p.Advance(5, "")          // past it: thinned again
	p.EndStage("policy", time.Second)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines, want start, two progress lines and the end:\n%s", len(lines), buf.String())
	}
	var last map[string]any
	if err := json.Unmarshal([]byte(lines[2]), &last); err != nil {
		t.Fatal(err)
	}
	if last["done"] != 1000.0 || last["total"] != 1000.0 || last["seconds_left"] != 0.0 {
		t.Errorf("last progress line %v, want done = total = 1000 and 0 s left", last)
	}
}

func TestTimeLeft(t *testing.T) {
	// A quarter done in 10 s: 30 s left at the same rate.
	if d, ok := timeLeft(25, 100, 10*time.Second); !ok || d != 30*time.Second {
		t.Errorf("timeLeft = %v, %v; want 30s", d, ok)
	}
	if _, ok := timeLeft(0, 100, time.Second); ok {
		t.Error("time left before any work")
	}
	if d, ok := timeLeft(120, 100, time.Second); !ok || d != 0 {
		t.Errorf("past the total: %v, %v", d, ok)
	}
}

// The terminal bar shows done/total when the total is known and no
// "/-" count when it is not.
func TestTextBarCount(t *testing.T) {
	var buf bytes.Buffer
	p := NewText(&buf)
	p.StartStage("estimate", 1000)
	p.Advance(250, "")
	time.Sleep(150 * time.Millisecond) // past the bar's redraw throttle
	p.Advance(250, "")
	if !strings.Contains(buf.String(), "/1000") {
		t.Errorf("no total in the bar: %q", buf.String())
	}
	p.EndStage("estimate", time.Second)
	buf.Reset()
	p.StartStage("policy", 0)
	p.Advance(5, "")
	time.Sleep(150 * time.Millisecond)
	p.Advance(5, "")
	p.EndStage("policy", time.Second)
	if strings.Contains(buf.String(), "/-") {
		t.Errorf("count without a total: %q", buf.String())
	}
}
