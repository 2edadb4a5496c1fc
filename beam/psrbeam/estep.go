package psrbeam

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/options/jobopts"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/psrlcb/psrlcb/estimate"
	"github.com/psrlcb/psrlcb/ingest"
)

func init() {
	register.DoFn4x1[context.Context, string, []byte, func([]byte), error](&estepFn{})
	register.Emitter1[[]byte]()
	register.Combiner1[[]byte](&sumStatsFn{})
	register.DoFn2x1[context.Context, []byte, error](&writeFn{})
}

// DefaultShardEpisodes is the number of episodes per shard: 65536 episodes
// of 10 steps are 7.9 MB of codes, a unit of work that takes a worker
// about a second per E-step pass, long enough to hide the per-element cost
// of a runner and short enough to balance a pass over 20 workers from 10⁷
// episodes on.
const DefaultShardEpisodes = 1 << 16

// Runner runs the data-parallel stages of psrlcb as Apache Beam pipelines
// on a registered Beam runner. As an estimate.EStepper it runs each E-step
// pass as a pipeline: the episode shards of the set are the main input,
// the current model θ is a side input, forward–backward per shard gives
// the sufficient statistics and log-likelihood of its episodes, and a
// CombineFn sums them into one file that the driver reads back.
//
// Runner is safe for concurrent use; its pipelines run one at a time.
type Runner struct {
	// Name is the Beam runner: prism (in process), flink, spark,
	// dataflow or universal (any portable job service given by
	// --endpoint).
	Name string
	// WorkDir holds the episode shards and the results of the passes; a
	// path every worker can read (gs://… or s3://… on a cluster). Empty:
	// a local temporary directory, removed by Close.
	WorkDir string
	// ShardEpisodes is the number of episodes per shard (default
	// DefaultShardEpisodes).
	ShardEpisodes int
	// DriverIngest: the command reads the logs in the driver (ingest.Read)
	// rather than with Runner.Ingest.
	DriverIngest bool

	mu      sync.Mutex
	dir     string // this run's directory under WorkDir
	tmp     bool   // dir is a local temporary directory
	sets    map[*ingest.Dataset][]string
	written []string
	passes  int
	// Passes counts the pipelines run (E-steps, U_h sums, episode
	// scores); PassTime their wall time.
	Passes   int
	PassTime time.Duration
}

// EStep runs one E-step pass at m over the episodes of d as a Beam
// pipeline (estimate.EStepper).
func (r *Runner) EStep(ctx context.Context, m *estimate.Model, d *ingest.Dataset) (*estimate.Stats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	shards, err := r.shards(ctx, d)
	if err != nil {
		return nil, err
	}
	model, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("psrbeam: encode model: %w", err)
	}
	r.passes++
	out := fmt.Sprintf("%s/estep-%06d.stats", r.dir, r.passes)
	start := time.Now()
	if err := r.run(ctx, EStepPipeline(shards, model, out)); err != nil {
		return nil, fmt.Errorf("E-step pass on the %s runner: %s", r.Name, lastCause(err))
	}
	r.Passes++
	r.PassTime += time.Since(start)
	r.written = append(r.written, out)
	raw, err := readFile(ctx, out)
	if err != nil {
		return nil, err
	}
	var st estimate.Stats
	if err := st.UnmarshalBinary(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", out, err)
	}
	return &st, nil
}

// run runs p on the runner. In loopback mode (Prism in process) Beam's
// universal runner leaves an empty placeholder file
// $TMPDIR/beamloopbackworker-* per job; run removes the empty ones made
// since it started.
func (r *Runner) run(ctx context.Context, p *beam.Pipeline) error {
	start := time.Now()
	_, err := beam.Run(ctx, r.Name, p)
	if !jobopts.IsLoopback() {
		return err
	}
	left, _ := filepath.Glob(filepath.Join(os.TempDir(), "beamloopbackworker-*"))
	for _, f := range left {
		if st, e := os.Stat(f); e == nil && st.Mode().IsRegular() && st.Size() == 0 && !st.ModTime().Before(start.Add(-time.Second)) {
			os.Remove(f)
		}
	}
	return err
}

// lastCause is the last line of a Beam job's error: the worker's own
// message, after the runner's dump of the failed plan.
func lastCause(err error) string {
	lines := strings.Split(strings.TrimSpace(err.Error()), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// EStepPipeline is the pipeline of one E-step pass: the shards at the given
// paths, the model's JSON as a side input, the summed statistics written
// to out.
func EStepPipeline(shards []string, model []byte, out string) *beam.Pipeline {
	return sumPipeline("estep", shards, model, &estepFn{}, &sumStatsFn{}, out)
}

// sumPipeline is the shape of the passes that add up per-shard figures:
// the work items (shard paths) reshuffled over the workers, fn applied to
// each with the model's JSON as a side input, its outputs added by the
// CombineFn sum, and the total written to out.
func sumPipeline(name string, items []string, model []byte, fn, sum any, out string) *beam.Pipeline {
	p, s := beam.NewPipelineWithRoot()
	s = s.Scope(name)
	theta := beam.Create(s, model)
	work := beam.Reshuffle(s, beam.CreateList(s, items))
	partial := beam.ParDo(s, fn, work, beam.SideInput{Input: theta})
	total := beam.Combine(s, sum, partial)
	beam.ParDo0(s, &writeFn{Path: out}, total)
	return p
}

// modelCache keeps the decoded side-input model across the elements of a
// bundle (every element of a pass sees the same model).
type modelCache struct {
	raw []byte
	m   *estimate.Model
}

// get returns the model of raw (a JSON estimate.Model), prepared, and
// whether it was decoded anew.
func (c *modelCache) get(raw []byte) (*estimate.Model, bool, error) {
	if c.m != nil && bytes.Equal(raw, c.raw) {
		return c.m, false, nil
	}
	var m estimate.Model
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, false, fmt.Errorf("psrbeam: decode model: %w", err)
	}
	m.Prepare()
	c.m, c.raw = &m, append(c.raw[:0], raw...)
	return c.m, true, nil
}

// readShard reads and decodes the episode shard at path.
func readShard(ctx context.Context, path string) (estimate.Block, error) {
	raw, err := readFile(ctx, path)
	if err != nil {
		return estimate.Block{}, err
	}
	blk, err := decodeShard(raw)
	if err != nil {
		return blk, fmt.Errorf("%s: %w", path, err)
	}
	return blk, nil
}

// estepFn computes the E-step statistics of one shard at the side-input
// model; the prepared E-step is kept across the shards of a bundle.
type estepFn struct {
	cache modelCache
	es    *estimate.EStep
}

func (f *estepFn) ProcessElement(ctx context.Context, path string, model []byte, emit func([]byte)) error {
	m, fresh, err := f.cache.get(model)
	if err != nil {
		return err
	}
	if fresh || f.es == nil {
		f.es = estimate.NewEStep(m)
	}
	blk, err := readShard(ctx, path)
	if err != nil {
		return err
	}
	st := f.es.NewStats()
	if err := f.es.Block(blk, st); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	b, err := st.MarshalBinary()
	if err != nil {
		return err
	}
	emit(b)
	return nil
}

// sumStatsFn adds E-step statistics (estimate.Stats in binary form).
type sumStatsFn struct{}

func (sumStatsFn) MergeAccumulators(a, b []byte) ([]byte, error) {
	if len(a) == 0 {
		return b, nil
	}
	if len(b) == 0 {
		return a, nil
	}
	var x, y estimate.Stats
	if err := x.UnmarshalBinary(a); err != nil {
		return nil, err
	}
	if err := y.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	if err := x.Add(&y); err != nil {
		return nil, err
	}
	return x.MarshalBinary()
}

// writeFn writes its input to Path. A retried bundle writes the same bytes
// again.
type writeFn struct{ Path string }

func (f *writeFn) ProcessElement(ctx context.Context, b []byte) error {
	return writeFile(ctx, f.Path, b)
}

// shards returns the shard paths of d, writing them on first use.
func (r *Runner) shards(ctx context.Context, d *ingest.Dataset) ([]string, error) {
	if err := r.open(); err != nil {
		return nil, err
	}
	if s, ok := r.sets[d]; ok {
		return s, nil
	}
	size := r.ShardEpisodes
	if size <= 0 {
		size = DefaultShardEpisodes
	}
	H, K := d.Horizon, d.NumEpisodes()
	var paths []string
	for k0 := 0; k0 < K; k0 += size {
		k1 := min(k0+size, K)
		blk := estimate.Block{Horizon: H, Obs: d.Obs[k0*H : k1*H], Act: d.Act[k0*H : k1*H], Reward: d.Reward[k0*H : k1*H], FirstOffset: k0}
		path := fmt.Sprintf("%s/set%03d-%06d.episodes", r.dir, len(r.sets), len(paths))
		if err := writeFile(ctx, path, encodeShard(blk)); err != nil {
			return nil, err
		}
		r.written = append(r.written, path)
		paths = append(paths, path)
	}
	r.sets[d] = paths
	return paths, nil
}

// open makes this run's directory.
func (r *Runner) open() error {
	if r.dir != "" {
		return nil
	}
	r.sets = map[*ingest.Dataset][]string{}
	if r.WorkDir == "" {
		dir, err := os.MkdirTemp("", "psrlcb-beam-")
		if err != nil {
			return err
		}
		r.dir, r.tmp = dir, true
		return nil
	}
	base := strings.TrimRight(r.WorkDir, "/")
	r.dir = fmt.Sprintf("%s/psrlcb-%d-%d", base, time.Now().UnixNano(), os.Getpid())
	if !strings.Contains(base, "://") {
		return os.MkdirAll(r.dir, 0o755)
	}
	return nil
}

// Close removes the files the runner wrote.
func (r *Runner) Close(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.dir == "" {
		return nil
	}
	if r.tmp {
		return os.RemoveAll(r.dir)
	}
	var first error
	for _, p := range r.written {
		fs, err := filesystem.New(ctx, p)
		if err != nil {
			return err
		}
		if rm, ok := fs.(filesystem.Remover); ok {
			if err := rm.Remove(ctx, p); err != nil && first == nil {
				first = err
			}
		}
		fs.Close()
	}
	if !strings.Contains(r.dir, "://") {
		os.Remove(r.dir)
	}
	return first
}
