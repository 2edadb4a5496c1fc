package estimate

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Model forms for Options.Form.
const (
	FormAuto    = "auto"    // full form when its tables are small, else compact (default)
	FormFull    = "full"    // emission given (s2, a), reward given (s, a, s2, o)
	FormCompact = "compact" // emission given s2, reward given (s, a, s2): Model.Compact
)

// fullFormCells bounds the step kernel of the full form, |A|·|O|·V·S²
// numbers per table (V reward values, at least 1), under FormAuto: 2²²
// numbers are 32 MiB, so every model of a few dozen symbols keeps the
// full form (the benchmark POMDPs need at most 10⁵) while a vocabulary of
// thousands switches to the compact form, whose tables grow like S·|O|.
const fullFormCells = 1 << 22

// ErrTooLarge is returned (wrapping ErrData) when the fit would need more
// memory than Options.MemoryLimit.
var ErrTooLarge = fmt.Errorf("%w: model too large for the memory limit", ErrData)

// chooseForm resolves Options.Form for the data shape and the largest
// rank S that will be fitted.
func chooseForm(form string, c *coded, S, nt int) bool {
	switch form {
	case FormCompact:
		return true
	case FormFull:
		return false
	}
	return float64(nt)*float64(S*S)*float64(c.A)*float64(c.O)*float64(max(len(c.values), 1)) > fullFormCells
}

// memoryNeed is the estimated peak memory, in bytes, of fitting rank S
// in the given form: each concurrent start keeps about six models (the
// SQUAREM points), two kernels and one statistics accumulator per worker
// plus the total.
func memoryNeed(c *coded, S, nt int, compact bool, o *Options) float64 {
	s, t := float64(S), float64(nt)
	var model, kernel, stats float64
	if compact {
		model, kernel, stats = c.compactNeed(s, t)
	} else {
		model, kernel, stats = c.fullNeed(s, t)
	}
	conc := float64(max(1, min(o.Restarts, o.Workers)))
	per := float64(max(1, o.Workers/max(1, min(o.Restarts, o.Workers))))
	return 8 * conc * (6*model + 2*kernel + (per+1)*stats)
}

// rewardWidth is the number of reward parameters of a cell: the reward
// values when categorical (at least 1), the mean and variance when
// Gaussian.
func (c *coded) rewardWidth() float64 {
	v := float64(max(len(c.values), 1))
	if c.kind == RewardGaussian {
		v = 2
	}
	return v
}

// compactNeed is the float64s of the Compact form's model, E-step kernel
// and statistics, of s states and t step tables.
func (c *coded) compactNeed(s, t float64) (model, kernel, stats float64) {
	O, A, H := float64(c.O), float64(c.A), float64(c.H)
	v := c.rewardWidth()
	model = s + s*O + t*(A*s*s+s*O+s*A*s*v)
	kernel = t * A * v * s * s
	stats = float64(blockEpisodes)*H*s + t*(s*O+s*A*s*v) + O*s
	return model, kernel, stats
}

// fullNeed is the float64s of the full form's model, E-step kernel and
// statistics, of s states and t step tables.
func (c *coded) fullNeed(s, t float64) (model, kernel, stats float64) {
	O, A := float64(c.O), float64(c.A)
	v := c.rewardWidth()
	model = s + s*O + t*(A*s*s+A*s*O+s*A*s*O*v)
	kernel = t * A * O * v * s * s
	if c.kind == RewardGaussian {
		kernel = t * (A*O*s*s + 3*s*A*s*O)
	} else if keepsTransposes(kernel, int(s)) {
		kernel *= 2 // kernel.MT
	}
	stats = t*(A*O*v*s*s+A*v*s) + O*s
	return model, kernel, stats
}

// checkMemory returns ErrTooLarge when fitting rank S needs more than
// the limit (0: no limit).
func checkMemory(c *coded, S, nt int, compact bool, o *Options) error {
	if o.MemoryLimit <= 0 {
		return nil
	}
	need := memoryNeed(c, S, nt, compact, o)
	if need <= float64(o.MemoryLimit) {
		return nil
	}
	form := formName(compact)
	what := fmt.Sprintf("%d observations, %d actions and rank %d need about %.1f GiB in the %s model form, above the memory limit of %s",
		c.O, c.A, S, need/(1<<30), form, gib(o.MemoryLimit))
	if tooLargeWithOneObs(c, S, nt, compact, o) {
		return fmt.Errorf("%w: %s; the actions and the rank dominate, so merging observations (--max-observations) cannot help: lower the rank (--rank/--max-rank), coarsen the action set, or raise --memory-limit", ErrTooLarge, what)
	}
	return fmt.Errorf("%w: %s; bucket rare observations, pass --max-observations N, lower the rank (--rank/--max-rank), or raise --memory-limit", ErrTooLarge, what)
}

// tooLargeWithOneObs says whether rank S would exceed the memory limit
// even with one observation. What to do depends on what dominates: with
// one observation the model would still be too large when the actions
// and the rank are what costs, and merging rare observations cannot help
// then.
func tooLargeWithOneObs(c *coded, S, nt int, compact bool, o *Options) bool {
	one := *c
	one.O = 1
	return memoryNeed(&one, S, nt, compact, o) > float64(o.MemoryLimit)
}

// DefaultMemoryLimit is three quarters of the memory this process may use:
// the smaller of the machine's MemTotal and the cgroup limit; 0 (no
// check) when neither can be read.
func DefaultMemoryLimit() int64 {
	return meminfoLimit(cgroupMemoryLimit()) / 4 * 3
}

// meminfoLimit lowers the limit lim (0: none) to /proc/meminfo's
// MemTotal; lim is unchanged when the file cannot be read.
func meminfoLimit(lim int64) int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return lim
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lim = memTotalLimit(sc.Text(), lim)
	}
	return lim
}

// memTotalLimit lowers lim (0: none) to the bytes of a MemTotal line of
// /proc/meminfo; lim is unchanged for any other line.
func memTotalLimit(line string, lim int64) int64 {
	fs := strings.Fields(line)
	if len(fs) >= 2 && fs[0] == "MemTotal:" {
		if kb, err := strconv.ParseInt(fs[1], 10, 64); err == nil && (lim == 0 || kb*1024 < lim) {
			lim = kb * 1024
		}
	}
	return lim
}

// formName is the name of the Compact form when compact, of the full
// form otherwise.
func formName(compact bool) string {
	if compact {
		return FormCompact
	}
	return FormFull
}

// cgroupMemoryLimit is the cgroup's memory.max, 0 when it cannot be read
// or is not a positive number.
func cgroupMemoryLimit() int64 {
	if b, err := os.ReadFile("/sys/fs/cgroup/memory.max"); err == nil {
		if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 0
}
