package pomdp

// Filter tracks the true belief over the hidden state along a history,
// one step at a time (what Belief recomputes from the start): the
// filtering a history-dependent policy defined on beliefs needs when it
// is followed through logs.
type Filter struct {
	mm   *model
	pred []float64
}

// NewFilter prepares a filter for m; it fails when m is invalid.
func (m *POMDP) NewFilter() (*Filter, error) {
	mm, err := prepare(m)
	if err != nil {
		return nil, err
	}
	return &Filter{mm: mm, pred: make([]float64, mm.nS)}, nil
}

// Start is the belief at step 1, after ObsInit (a new slice).
func (f *Filter) Start() []float64 { return append([]float64(nil), f.mm.Start...) }

// Update replaces b by the belief after taking action a from it and then
// observing o, and reports whether that observation has positive
// probability (when not, b is left undefined). A Filter is not safe for
// concurrent use; each goroutine needs its own.
func (f *Filter) Update(b []float64, a, o int) bool {
	if a < 0 || a >= f.mm.nA || o < 0 || o >= f.mm.nO || len(b) != f.mm.nS {
		return false
	}
	f.mm.predict(b, a, f.pred)
	return f.mm.update(f.pred, a, o, b) > 0
}

// Clone is a filter of the same model for another goroutine.
func (f *Filter) Clone() *Filter { return &Filter{mm: f.mm, pred: make([]float64, f.mm.nS)} }
