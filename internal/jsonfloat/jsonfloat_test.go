package jsonfloat

import (
	"encoding/json"
	"math"
	"testing"
)

func TestRoundTrip(t *testing.T) {
	in := []Float{0.1, -3e-300, 1.0 / 3, Float(math.NaN()), Float(math.Inf(1))}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "[0.10000000000000001,-3.0000000000000002e-300,0.33333333333333331,null,null]" {
		t.Errorf("json %s", b)
	}
	var out []Float
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if out[i] != in[i] {
			t.Errorf("%d: %v, want %v", i, out[i], in[i])
		}
	}
	if !math.IsNaN(float64(out[3])) || !math.IsNaN(float64(out[4])) {
		t.Errorf("null read back as %v, %v", out[3], out[4])
	}
}
