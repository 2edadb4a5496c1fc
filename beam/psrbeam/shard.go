package psrbeam

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/psrlcb/psrlcb/estimate"
)

// An episode shard is a run of consecutive episodes of a dataset in its
// compact coded form, the unit of work of the E-step pipelines: the
// driver writes the shards once per set of episodes and every E-step pass
// reads them again (a pass over the data costs 12 bytes per step: two
// uint16 codes and a float64 reward).
//
// Layout, little-endian: magic "PSEP", version 1, horizon H, episodes n,
// index of the first episode in its dataset (uint64), then n·H observation
// codes (uint16), n·H action codes (uint16) and n·H rewards (float64).
const (
	shardMagic   = 0x50455350
	shardVersion = 1
	shardHeader  = 4 + 4 + 4 + 4 + 8
)

var errShard = errors.New("psrbeam: malformed episode shard")

func encodeShard(b estimate.Block) []byte {
	n := len(b.Obs) / b.Horizon
	out := make([]byte, 0, shardHeader+len(b.Obs)*12)
	out = binary.LittleEndian.AppendUint32(out, shardMagic)
	out = binary.LittleEndian.AppendUint32(out, shardVersion)
	out = binary.LittleEndian.AppendUint32(out, uint32(b.Horizon))
	out = binary.LittleEndian.AppendUint32(out, uint32(n))
	out = binary.LittleEndian.AppendUint64(out, uint64(b.FirstOffset))
	for _, o := range b.Obs {
		out = binary.LittleEndian.AppendUint16(out, o)
	}
	for _, a := range b.Act {
		out = binary.LittleEndian.AppendUint16(out, a)
	}
	for _, r := range b.Reward {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(r))
	}
	return out
}

func decodeShard(raw []byte) (estimate.Block, error) {
	var b estimate.Block
	if len(raw) < shardHeader || binary.LittleEndian.Uint32(raw) != shardMagic || binary.LittleEndian.Uint32(raw[4:]) != shardVersion {
		return b, errShard
	}
	H := int(binary.LittleEndian.Uint32(raw[8:]))
	n := int(binary.LittleEndian.Uint32(raw[12:]))
	b.FirstOffset = int(binary.LittleEndian.Uint64(raw[16:]))
	steps := n * H
	if H <= 0 || n < 0 || len(raw) != shardHeader+steps*12 {
		return b, errShard
	}
	b.Horizon = H
	p := raw[shardHeader:]
	b.Obs, b.Act, b.Reward = make([]uint16, steps), make([]uint16, steps), make([]float64, steps)
	for i := range b.Obs {
		b.Obs[i] = binary.LittleEndian.Uint16(p[2*i:])
	}
	p = p[2*steps:]
	for i := range b.Act {
		b.Act[i] = binary.LittleEndian.Uint16(p[2*i:])
	}
	p = p[2*steps:]
	for i := range b.Reward {
		b.Reward[i] = math.Float64frombits(binary.LittleEndian.Uint64(p[8*i:]))
	}
	return b, nil
}

// writeFile writes data to path through Beam's filesystems (local paths,
// gs://, s3:// when their packages are linked in).
func writeFile(ctx context.Context, path string, data []byte) error {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return err
	}
	defer fs.Close()
	if err := filesystem.Write(ctx, fs, path, data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// readFile reads path through Beam's filesystems.
func readFile(ctx context.Context, path string) ([]byte, error) {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, err
	}
	defer fs.Close()
	b, err := filesystem.Read(ctx, fs, path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return b, nil
}
