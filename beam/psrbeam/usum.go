package psrbeam

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
	"github.com/psrlcb/psrlcb/pessimism"
)

func init() {
	register.DoFn4x1[context.Context, string, []byte, func([]byte), error](&usumFn{})
	register.Combiner1[[]byte](&sumUFn{})
}

// USums runs the sums of the bonus's U_h (eq. (6) of Huang, Liang, Yang,
// ICLR 2024, arXiv:2307.00405) over the episodes of d as one Beam pipeline
// (pessimism.USummer): each shard of d, with the list of its episodes in
// each D_h (splits[h]), is a work item; pessimism.PartialUSums gives the
// shard's sums at the side-input model and a CombineFn adds them. The
// driver factorises U_h = λI + Σ.
func (r *Runner) USums(ctx context.Context, m *estimate.Model, d *ingest.Dataset, splits [][]int) ([][]float64, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	shards, err := r.shards(ctx, d)
	if err != nil {
		return nil, err
	}
	size := r.shardSize()
	// members[i][h]: the episodes of shard i in D_h, as indexes in the shard.
	members := make([][][]uint32, len(shards))
	for i := range members {
		members[i] = make([][]uint32, len(splits))
	}
	for h, sp := range splits {
		for _, k := range sp {
			if k < 0 || k >= d.NumEpisodes() {
				return nil, fmt.Errorf("psrbeam: episode %d of D_%d is not in the dataset", k, h)
			}
			members[k/size][h] = append(members[k/size][h], uint32(k%size))
		}
	}
	model, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("psrbeam: encode model: %w", err)
	}
	r.passes++
	items := make([]string, len(shards))
	for i, s := range shards {
		path := fmt.Sprintf("%s/usum-%06d-%06d.members", r.dir, r.passes, i)
		if err := writeFile(ctx, path, encodeMembers(members[i])); err != nil {
			return nil, err
		}
		r.written = append(r.written, path)
		items[i] = s + "\n" + path
	}
	out := fmt.Sprintf("%s/usum-%06d.sums", r.dir, r.passes)
	start := time.Now()
	if err := r.run(ctx, USumPipeline(items, model, out)); err != nil {
		return nil, fmt.Errorf("U_h pass on the %s runner: %s", r.Name, lastCause(err))
	}
	r.Passes++
	r.PassTime += time.Since(start)
	r.written = append(r.written, out)
	raw, err := readFile(ctx, out)
	if err != nil {
		return nil, err
	}
	sums, err := decodeSums(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", out, err)
	}
	return sums, nil
}

// shardSize is the number of episodes per shard.
func (r *Runner) shardSize() int {
	if r.ShardEpisodes > 0 {
		return r.ShardEpisodes
	}
	return DefaultShardEpisodes
}

// USumPipeline is the pipeline of one U_h pass: items are "shard\nmembers"
// path pairs, the model's JSON a side input, the summed U_h sums written
// to out.
func USumPipeline(items []string, model []byte, out string) *beam.Pipeline {
	return sumPipeline("usum", items, model, &usumFn{}, &sumUFn{}, out)
}

// usumFn computes one shard's U_h sums at the side-input model.
type usumFn struct {
	cache modelCache
}

func (f *usumFn) ProcessElement(ctx context.Context, item string, model []byte, emit func([]byte)) error {
	m, _, err := f.cache.get(model)
	if err != nil {
		return err
	}
	shardPath, membersPath, ok := strings.Cut(item, "\n")
	if !ok {
		return fmt.Errorf("psrbeam: malformed U_h work item %q", item)
	}
	blk, err := readShard(ctx, shardPath)
	if err != nil {
		return err
	}
	raw, err := readFile(ctx, membersPath)
	if err != nil {
		return err
	}
	eps, err := decodeMembers(raw, m.Horizon)
	if err != nil {
		return fmt.Errorf("%s: %w", membersPath, err)
	}
	n := len(blk.Obs) / blk.Horizon
	d := &ingest.Dataset{Horizon: blk.Horizon, Obs: blk.Obs, Act: blk.Act, Reward: blk.Reward,
		ObsVocab: make([]string, m.NumObs), ActVocab: make([]string, m.NumActions),
		EpisodeIDs: make([]string, n), Length: make([]int32, n)}
	for k := range n {
		d.EpisodeIDs[k] = "#" + strconv.Itoa(blk.FirstOffset+k) // the episode's index in the logs
		d.Length[k] = int32(blk.Horizon)
	}
	sums, err := pessimism.PartialUSums(m, d, eps)
	if err != nil {
		return fmt.Errorf("%s: %w", shardPath, err)
	}
	emit(encodeSums(sums))
	return nil
}

// sumUFn adds U_h sums (encodeSums form).
type sumUFn struct{}

func (sumUFn) MergeAccumulators(a, b []byte) ([]byte, error) {
	if len(a) == 0 {
		return b, nil
	}
	if len(b) == 0 {
		return a, nil
	}
	x, err := decodeSums(a)
	if err != nil {
		return nil, err
	}
	y, err := decodeSums(b)
	if err != nil {
		return nil, err
	}
	if len(x) != len(y) {
		return nil, errSums
	}
	for h := range x {
		if len(x[h]) != len(y[h]) {
			return nil, errSums
		}
		for i, v := range y[h] {
			x[h][i] += v
		}
	}
	return encodeSums(x), nil
}

var errSums = errors.New("psrbeam: malformed U_h sums")

// encodeSums: H, then per step its length and float64s, little-endian.
func encodeSums(sums [][]float64) []byte {
	var out []byte
	out = binary.LittleEndian.AppendUint32(out, uint32(len(sums)))
	for _, s := range sums {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(s)))
		for _, v := range s {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
		}
	}
	return out
}

func decodeSums(raw []byte) ([][]float64, error) {
	if len(raw) < 4 {
		return nil, errSums
	}
	H := int(binary.LittleEndian.Uint32(raw))
	raw = raw[4:]
	out := make([][]float64, 0, min(H, 1<<16))
	for range H {
		if len(raw) < 4 {
			return nil, errSums
		}
		n := int(binary.LittleEndian.Uint32(raw))
		raw = raw[4:]
		if len(raw) < 8*n {
			return nil, errSums
		}
		s := make([]float64, n)
		for i := range s {
			s[i] = math.Float64frombits(binary.LittleEndian.Uint64(raw[8*i:]))
		}
		raw = raw[8*n:]
		out = append(out, s)
	}
	if len(raw) != 0 {
		return nil, errSums
	}
	return out, nil
}

// encodeMembers: H, then per step the count and the episode indexes
// (uint32, little-endian).
func encodeMembers(m [][]uint32) []byte {
	var out []byte
	out = binary.LittleEndian.AppendUint32(out, uint32(len(m)))
	for _, s := range m {
		out = binary.LittleEndian.AppendUint32(out, uint32(len(s)))
		for _, k := range s {
			out = binary.LittleEndian.AppendUint32(out, k)
		}
	}
	return out
}

func decodeMembers(raw []byte, H int) ([][]int, error) {
	bad := errors.New("psrbeam: malformed split membership")
	if len(raw) < 4 || int(binary.LittleEndian.Uint32(raw)) != H {
		return nil, bad
	}
	raw = raw[4:]
	out := make([][]int, H)
	for h := range H {
		if len(raw) < 4 {
			return nil, bad
		}
		n := int(binary.LittleEndian.Uint32(raw))
		raw = raw[4:]
		if len(raw) < 4*n {
			return nil, bad
		}
		out[h] = make([]int, n)
		for i := range out[h] {
			out[h][i] = int(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		raw = raw[4*n:]
	}
	if len(raw) != 0 {
		return nil, bad
	}
	return out, nil
}
