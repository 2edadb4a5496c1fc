// Package jsonfloat has a float64 whose JSON form is null when it is not
// finite, so that study checkpoints (bench/quality, bench/stress) can hold
// "no value" and read it back as NaN. It prints as a plain float64.
package jsonfloat

import (
	"fmt"
	"math"
)

// Float encodes NaN and ±Inf as JSON null and decodes null as NaN; finite
// values round-trip exactly.
type Float float64

// MarshalJSON implements json.Marshaler.
func (f Float) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return []byte(fmt.Sprintf("%.17g", float64(f))), nil
}

// UnmarshalJSON implements json.Unmarshaler.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	var v float64
	if _, err := fmt.Sscan(string(b), &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}
