package report

import (
	"math"
	"sort"
	"strconv"
	"strings"
)

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// num formats x with sig significant digits for display, without
// exponent for everyday magnitudes and without trailing zeros: 0.9078,
// −123.5, 5000, 1.2e−06. NaN is shown as "—" and infinities as "∞".
func num(x float64, sig int) string {
	if s, ok := special(x); ok {
		return s
	}
	var s string
	if ax := math.Abs(x); ax >= 1e-4 && ax < 1e15 {
		s = fixedSig(x, ax, sig)
	} else {
		s = strconv.FormatFloat(x, 'g', sig, 64)
		s = strings.Replace(s, "e-0", "e-", 1)
		s = strings.Replace(s, "e+0", "e", 1)
		s = strings.Replace(s, "e+", "e", 1)
	}
	if strings.HasPrefix(s, "-") {
		s = "−" + s[1:]
	}
	if s == "−0" {
		s = "0"
	}
	return s
}

// special is how num writes NaN, the infinities and zero (ok false for
// any other x).
func special(x float64) (string, bool) {
	switch {
	case math.IsNaN(x):
		return "—", true
	case math.IsInf(x, 1):
		return "∞", true
	case math.IsInf(x, -1):
		return "−∞", true
	case x == 0:
		return "0", true
	}
	return "", false
}

// fixedSig writes x (of magnitude ax) in fixed point with sig significant
// digits, without trailing zeros; digits left of the point past sig are
// rounded to zero.
func fixedSig(x, ax float64, sig int) string {
	digits := sig - 1 - int(math.Floor(math.Log10(ax)))
	if digits < 0 {
		// Round to sig significant digits, print as an integer.
		p := math.Pow(10, float64(-digits))
		return strconv.FormatFloat(math.Round(x/p)*p, 'f', 0, 64)
	}
	s := strconv.FormatFloat(x, 'f', digits, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// pct formats a share in [0,1] as a percentage with sensible precision.
func pct(x float64) string {
	switch {
	case math.IsNaN(x):
		return "—"
	case x == 0:
		return "0%"
	case x < 0.001:
		return "<0.1%"
	case x > 0.999 && x < 1:
		return ">99.9%"
	case x < 0.1:
		return strconv.FormatFloat(100*x, 'f', 1, 64) + "%"
	}
	return strconv.FormatFloat(100*x, 'f', 0, 64) + "%"
}
