package main

import (
	"math"
	"sort"
)

// median of the non-NaN values (NaN when there are none).
func median(xs []float64) float64 {
	v := finite(xs)
	if len(v) == 0 {
		return math.NaN()
	}
	sort.Float64s(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}

// meanSE is the mean and the standard error sd/√n (sample sd, n−1) of the
// non-NaN values; the standard error is 0 for a single value.
func meanSE(xs []float64) (mean, se float64) {
	v := finite(xs)
	n := float64(len(v))
	if n == 0 {
		return math.NaN(), math.NaN()
	}
	mean = sum(v) / n
	if n < 2 {
		return mean, 0
	}
	return mean, math.Sqrt(squaredDeviations(v, mean)/(n-1)) / math.Sqrt(n)
}

// sum is the sum of xs, added in order.
func sum(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s
}

// squaredDeviations is the sum of the squared deviations of xs from mean,
// added in order.
func squaredDeviations(xs []float64, mean float64) float64 {
	var ss float64
	for _, x := range xs {
		ss += (x - mean) * (x - mean)
	}
	return ss
}

// logSlope is the least-squares slope of log10 y against log10 x over the
// points with y > floor (NaN with fewer than two such points).
func logSlope(xs, ys []float64, floor float64) float64 {
	lx, ly := logPoints(xs, ys, floor)
	if len(lx) < 2 {
		return math.NaN()
	}
	return slope(lx, ly)
}

// logPoints are log10 x and log10 y of the points with y > floor and
// x > 0.
func logPoints(xs, ys []float64, floor float64) (lx, ly []float64) {
	for i := range xs {
		if ys[i] > floor && xs[i] > 0 {
			lx = append(lx, math.Log10(xs[i]))
			ly = append(ly, math.Log10(ys[i]))
		}
	}
	return lx, ly
}

// slope is the least-squares slope of y against x (NaN when every x is
// the same).
func slope(lx, ly []float64) float64 {
	n := float64(len(lx))
	mx, my := sum(lx)/n, sum(ly)/n
	var sxy, sxx float64
	for i := range lx {
		sxy += (lx[i] - mx) * (ly[i] - my)
		sxx += (lx[i] - mx) * (lx[i] - mx)
	}
	if sxx == 0 {
		return math.NaN()
	}
	return sxy / sxx
}

func finite(xs []float64) []float64 {
	v := make([]float64, 0, len(xs))
	for _, x := range xs {
		if !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	return v
}
