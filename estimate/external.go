package estimate

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"sort"

	"github.com/psrlcb/psrlcb/ingest"
)

// The E-step outside the process.
//
// Every quantity of the E-step is a sum over episodes (the expected
// sufficient statistics of the complete-data log-likelihood and the
// log-likelihood itself), so the pass over the episodes can run anywhere
// that can add: a data-parallel engine such as Apache Beam computes the
// statistics of blocks of episodes with EStep.Block, sums them (Stats.Add,
// in any order: the sum agrees with Fit's own to rounding) and hands the
// total back through an EStepper. Fit keeps everything model-sized: the
// M-step, the SQUAREM extrapolation, the restarts and the rank choice.

// EStepper runs the pass of an E-step over the episodes somewhere else
// than Fit's own workers (Options.EStepper).
type EStepper interface {
	// EStep returns the statistics of the E-step at m over every episode
	// of d, made with NewEStep(m). d is the dataset given to Fit or a
	// subset Fit made of it (the training and held-out parts of the rank
	// choice); Fit never modifies it, so an implementation may key a cache
	// of d's episodes on the pointer. Fit runs its restarts concurrently,
	// so EStep must be safe for concurrent use.
	EStep(ctx context.Context, m *Model, d *ingest.Dataset) (*Stats, error)
}

// Stats are the expected sufficient statistics of the E-step at a model
// over some episodes, with their log-likelihood. The statistics of disjoint
// sets of episodes add up to those of their union.
type Stats struct{ st *stats }

// LogLik is Σ ln P_θ(o_{1:H}, r_{1:H} | a_{1:H}) over the episodes added
// (−∞ if one of them has probability 0).
func (s *Stats) LogLik() float64 { return s.st.ll }

// Add adds o into s; both must come from EStep values of the same model
// shape.
func (s *Stats) Add(o *Stats) error {
	if !sameShape(s.st, o.st) {
		return errorf(ErrData, "E-step statistics of different model shapes")
	}
	s.st.add(o.st)
	return nil
}

func sameShape(a, b *stats) bool {
	var la, lb []int
	a.each(func(d []float64, _ int) { la = append(la, len(d)) })
	b.each(func(d []float64, _ int) { lb = append(lb, len(d)) })
	if len(la) != len(lb) || len(a.bucket) != len(b.bucket) || len(a.cnt) != len(b.cnt) {
		return false
	}
	for i := range la {
		if la[i] != lb[i] {
			return false
		}
	}
	return true
}

// statsMagic opens the binary form of Stats ("PSES", version 1).
const statsMagic = 0x50534531

// MarshalBinary encodes s: a header (magic, reward kind, number of step
// tables, log-likelihood, episodes of probability 0), then every vector
// with its length, little-endian float64.
func (s *Stats) MarshalBinary() ([]byte, error) {
	st := s.st
	b := st.appendHeader(nil)
	st.each(func(d []float64, _ int) { b = appendVec(b, d) })
	return b, nil
}

// appendHeader appends the encoding's header to b: the magic number, the
// reward kind, the number of step tables, ll and zero.
func (st *stats) appendHeader(b []byte) []byte {
	nt := len(st.bucket) + len(st.cnt)
	kind := RewardCategorical
	if len(st.cnt) > 0 {
		kind = RewardGaussian
	}
	b = binary.LittleEndian.AppendUint32(b, statsMagic)
	b = binary.LittleEndian.AppendUint32(b, uint32(kind))
	b = binary.LittleEndian.AppendUint32(b, uint32(nt))
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(st.ll))
	return binary.LittleEndian.AppendUint64(b, uint64(st.zero))
}

// appendVec appends the length of d and its entries' bits to b.
func appendVec(b []byte, d []float64) []byte {
	b = binary.LittleEndian.AppendUint64(b, uint64(len(d)))
	for _, x := range d {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

var errStatsFormat = errors.New("estimate: malformed E-step statistics")

// tableVecs is the number of vectors of a step table's statistics: 2
// for categorical rewards, 3 for Gaussian ones.
func tableVecs(kind RewardKind) int {
	if kind == RewardGaussian {
		return 3
	}
	return 2
}

// UnmarshalBinary decodes the form written by MarshalBinary into s.
func (s *Stats) UnmarshalBinary(b []byte) error {
	r := statsReader{b: b}
	if r.u32() != statsMagic {
		return errStatsFormat
	}
	kind, nt := RewardKind(r.u32()), int(r.u32())
	st := &stats{ll: math.Float64frombits(r.u64()), zero: int(r.u64())}
	st.init = r.vec()
	perTable := tableVecs(kind)
	if r.bad || nt > len(r.b) || kind != RewardCategorical && kind != RewardGaussian {
		return errStatsFormat
	}
	vs := r.vecs(perTable * nt)
	if r.bad || len(r.b) != 0 {
		return errStatsFormat
	}
	st.setTables(kind, nt, perTable, vs)
	s.st = st
	return nil
}

// setTables sets st's per-table vectors of the given reward kind from
// vs, nt tables of perTable vectors in stats.each's order.
func (st *stats) setTables(kind RewardKind, nt, perTable int, vs [][]float64) {
	// stats.each visits the vectors table by table.
	for t := 0; t < nt; t++ {
		v := vs[t*perTable:]
		if kind == RewardCategorical {
			st.bucket, st.last = append(st.bucket, v[0]), append(st.last, v[1])
		} else {
			st.cnt, st.sr, st.srr = append(st.cnt, v[0]), append(st.sr, v[1]), append(st.srr, v[2])
		}
	}
}

type statsReader struct {
	b   []byte
	bad bool
}

func (r *statsReader) take(n int) []byte {
	if r.bad || n < 0 || len(r.b) < n {
		r.bad = true
		return make([]byte, max(n, 0))
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *statsReader) u32() uint32 { return binary.LittleEndian.Uint32(r.take(4)) }
func (r *statsReader) u64() uint64 { return binary.LittleEndian.Uint64(r.take(8)) }

func (r *statsReader) vec() []float64 {
	n := r.u64()
	if r.bad || n > uint64(len(r.b)/8) {
		r.bad = true
		return nil
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Float64frombits(r.u64())
	}
	return v
}

// vecs reads n vectors in order.
func (r *statsReader) vecs(n int) [][]float64 {
	vs := make([][]float64, n)
	for i := range vs {
		vs[i] = r.vec()
	}
	return vs
}

// Block is a run of episodes in the coded form of ingest.Dataset: episode
// k, step h (0-based) at index k·Horizon+h of each slice.
type Block struct {
	Horizon     int
	Obs, Act    []uint16
	Reward      []float64
	FirstOffset int // index of the block's first episode in its dataset, for messages
}

// EStep is the E-step at one model: the per-model products the
// forward–backward recursions read, built once and used for any number of
// blocks. It is safe for concurrent use by Block calls with distinct
// Stats.
type EStep struct {
	k *kernel
}

// NewEStep prepares the E-step at m (a prepared, valid model).
func NewEStep(m *Model) *EStep { return &EStep{k: newKernel(m, nil)} }

// NewStats returns zero statistics of the model's shape.
func (e *EStep) NewStats() *Stats { return &Stats{st: newStats(e.k, e.k.H, true)} }

// Block runs forward–backward at the model over the episodes of b and adds
// their statistics to st (from e.NewStats or decoded from it). Codes out
// of the model's vocabularies, rewards outside a categorical model's
// support and non-finite rewards are data errors naming the episode (its
// index in the dataset) and the step.
func (e *EStep) Block(b Block, st *Stats) error {
	k := e.k
	if err := e.checkBlock(b, st); err != nil {
		return err
	}
	c, err := e.codeBlock(b)
	if err != nil {
		return err
	}
	w := newWork(k.S, b.Horizon, k.kind == RewardGaussian)
	if k.kind == RewardGaussian {
		k.estepGauss(c, 0, c.K, st.st, w)
	} else {
		k.estepCat(c, 0, c.K, st.st, w)
	}
	return nil
}

// checkBlock checks that b holds whole episodes of the model's horizon,
// that the model is not of the Compact form and that st has its shape.
func (e *EStep) checkBlock(b Block, st *Stats) error {
	k, H := e.k, b.Horizon
	if H != k.H || H <= 0 || len(b.Obs)%H != 0 || len(b.Act) != len(b.Obs) || len(b.Reward) != len(b.Obs) {
		return errorf(ErrData, "E-step block of %d steps does not hold episodes of %d steps", len(b.Obs), k.H)
	}
	if k.cp != nil {
		return errorf(ErrOptions, "the E-step of the compact model form (large vocabularies) runs in process only")
	}
	if !sameShape(st.st, newStats(k, k.H, true)) {
		return errorf(ErrData, "E-step statistics of another model shape")
	}
	return nil
}

// codeBlock returns the episodes of b coded for the model's kernel,
// checking every step (codeBlockStep).
func (e *EStep) codeBlock(b Block) (*coded, error) {
	k, H := e.k, b.Horizon
	c := &coded{K: len(b.Obs) / H, H: H, O: k.O, A: k.A, obs: b.Obs, act: b.Act, rew: b.Reward, kind: k.kind, values: k.m.RewardValues}
	if c.kind == RewardCategorical {
		c.rv = make([]uint8, len(b.Reward))
	}
	for i := range b.Obs {
		if err := c.codeBlockStep(b, i); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// codeBlockStep checks step i of the block b against c's vocabularies
// and, for categorical rewards, codes its reward value into c.rv.
func (c *coded) codeBlockStep(b Block, i int) error {
	H := c.H
	ep, step := b.FirstOffset+i/H, i%H+1
	if int(b.Obs[i]) >= c.O || int(b.Act[i]) >= c.A {
		return errorf(ErrData, "episode %d step %d: code out of vocabulary", ep, step)
	}
	r := b.Reward[i]
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return errorf(ErrData, "episode %d step %d: reward %v", ep, step, r)
	}
	if c.rv != nil {
		j := sort.SearchFloat64s(c.values, r)
		if j == len(c.values) || c.values[j] != r {
			return errorf(ErrData, "episode %d step %d: reward %v outside the model's values", ep, step, r)
		}
		c.rv[i] = uint8(j)
	}
	return nil
}

// runEStep is the E-step at k's model over c: by the EStepper when one is
// set, by the in-process workers otherwise.
func (o *Options) runEStep(ctx context.Context, k *kernel, c *coded, workers int) (*stats, error) {
	if o.EStepper == nil || c.src == nil || k.cp != nil {
		// The compact form's statistics are per block and step (see
		// compactStats); its E-step stays in process.
		return k.estep(ctx, c, workers)
	}
	s, err := o.EStepper.EStep(ctx, k.m, c.src)
	if err != nil {
		return nil, err
	}
	if s == nil || !sameShape(s.st, newStats(k, c.H, true)) {
		return nil, errorf(ErrData, "the E-step runner returned statistics of another model shape")
	}
	return s.st, nil
}
