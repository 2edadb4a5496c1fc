package pomdp

import (
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/psrlcb/psrlcb/schemas"

	"github.com/parquet-go/parquet-go"

	"github.com/psrlcb/psrlcb/internal/atomicfile"
)

// LogRow is one row of the trajectory logs in psrlcb's input schema
// (docs/design.md, section 3).
type LogRow = schemas.Row

// Row returns row i (episode i/H, step i%H+1) of the logs.
func (l *Logs) Row(i int) LogRow {
	m := l.Model
	return LogRow{
		EpisodeID:   l.EpisodeID(i / l.Horizon),
		Step:        int64(i%l.Horizon) + 1,
		Observation: m.ObsName(int(l.Obs[i])),
		Action:      m.Actions[l.Act[i]],
		Reward:      l.Reward[i],
		Propensity:  l.Propensity[i],
	}
}

// parquetBatch is the number of rows handed to the Parquet writer at a
// time, and parquetRowGroup the rows per row group: large enough for good
// compression, small enough that readers can stream.
const (
	parquetBatch    = 4096
	parquetRowGroup = 1 << 20
)

// WriteParquet writes the logs as Parquet (zstd, dictionary-encoded
// observation and action) with the columns episode_id, step, observation,
// action, reward, propensity, terminal (always false: simulated episodes
// run to the horizon). The key-value metadata records the model, horizon,
// behaviour and seed.
func WriteParquet(w io.Writer, l *Logs) error {
	pw := newLogWriter(w, l)
	buf := make([]LogRow, 0, parquetBatch)
	n := len(l.Obs)
	for i := 0; i < n; i++ {
		buf = append(buf, l.Row(i))
		if len(buf) == parquetBatch || i == n-1 {
			if _, err := pw.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	return pw.Close()
}

// WriteParquetFile writes the logs to path atomically: to a temporary file
// in the same directory, synced, then renamed over path, so a reader never
// sees a partial file and a failure leaves nothing behind.
func WriteParquetFile(path string, l *Logs) error {
	return atomicfile.Write(path, func(f *os.File) error { return WriteParquet(f, l) })
}

// newLogWriter is a Parquet writer of the rows of l to w, zstd-compressed,
// with the simulation's model, horizon, behaviour and seed as metadata.
func newLogWriter(w io.Writer, l *Logs) *parquet.GenericWriter[LogRow] {
	return parquet.NewGenericWriter[LogRow](w,
		parquet.Compression(&parquet.Zstd),
		parquet.MaxRowsPerRowGroup(parquetRowGroup),
		parquet.CreatedBy("psrlcb", "simulate", ""),
		parquet.KeyValueMetadata("psrlcb.pomdp", filepath.Base(l.Model.Name)),
		parquet.KeyValueMetadata("psrlcb.horizon", strconv.Itoa(l.Horizon)),
		parquet.KeyValueMetadata("psrlcb.behavior", l.Behavior),
		parquet.KeyValueMetadata("psrlcb.seed", strconv.FormatUint(l.Seed, 10)),
	)
}
