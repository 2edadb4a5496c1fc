package progress

import (
	"io"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// Reporter receives the pipeline's progress: one stage at a time, each
// with an optional number of units of work. Implementations must be safe
// for concurrent use; the zero-cost default is Nop.
type Reporter interface {
	// StartStage begins a stage; total is its number of units, 0 when
	// unknown.
	StartStage(name string, total int64)
	// Advance records n more units done, with a short detail (for example
	// the EM iteration and log-likelihood).
	Advance(n int64, detail string)
	// EndStage closes the current stage.
	EndStage(name string, elapsed time.Duration)
	// Info reports a notable event with key/value attributes.
	Info(msg string, kv ...any)
}

// Nop discards everything.
type Nop struct{}

func (Nop) StartStage(string, int64)       {}
func (Nop) Advance(int64, string)          {}
func (Nop) EndStage(string, time.Duration) {}
func (Nop) Info(string, ...any)            {}

// NewText draws a live progress bar per stage on w (a terminal).
func NewText(w io.Writer) Reporter { return &textProgress{w: w} }

type textProgress struct {
	mu    sync.Mutex
	w     io.Writer
	bar   *progressbar.ProgressBar
	stage string
}

func (p *textProgress) StartStage(name string, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	opts, total := p.barOptions(name, total)
	p.stage = name
	p.bar = progressbar.NewOptions64(total, opts...)
}

// barOptions returns the options of stage name's bar and the bar's total:
// a bar with a count when total > 0, else a spinner (total −1).
func (p *textProgress) barOptions(name string, total int64) ([]progressbar.Option, int64) {
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(padStage(name)),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowElapsedTimeOnFinish(),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionClearOnFinish(),
	}
	if total > 0 {
		// A bar with "done/total" and the estimated time left.
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true))
	} else {
		// Unknown work: a spinner, without a count that has no total.
		total = -1
		opts = append(opts, progressbar.OptionSetPredictTime(false))
	}
	return opts, total
}

func (p *textProgress) Advance(n int64, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar == nil {
		return
	}
	if detail != "" {
		p.bar.Describe(padStage(p.stage) + " " + detail)
	}
	_ = p.bar.Add64(n)
}

func (p *textProgress) EndStage(name string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Finish()
		p.bar = nil
	}
	io.WriteString(p.w, padStage(name)+" done in "+d.Round(time.Millisecond).String()+"\n")
}

func (p *textProgress) Info(msg string, kv ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar != nil {
		_ = p.bar.Clear()
	}
	slog.New(slog.NewTextHandler(p.w, &slog.HandlerOptions{ReplaceAttr: dropTime})).Info(msg, kv...)
}

const stageWidth = 10

func padStage(s string) string {
	for len(s) < stageWidth {
		s += " "
	}
	return s[:stageWidth]
}

func dropTime(groups []string, a slog.Attr) slog.Attr {
	if len(groups) == 0 && a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// NewJSON writes one JSON object per event to w (structured logs
// for scheduled jobs: stderr that is not a terminal, or --log-format json).
// Advance events are thinned to one per second per stage so a long EM run
// does not flood the log; the one that brings a stage to its total is
// always written, so the stage's last line says it is done.
func NewJSON(w io.Writer) Reporter {
	return &jsonProgress{log: slog.New(slog.NewJSONHandler(w, nil))}
}

type jsonProgress struct {
	mu    sync.Mutex
	log   *slog.Logger
	stage string
	done  int64
	total int64
	last  time.Time
	start time.Time
}

func (p *jsonProgress) StartStage(name string, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stage, p.done, p.total, p.last, p.start = name, 0, total, time.Now(), time.Now()
	if total > 0 {
		p.log.Info("stage started", "stage", name, "total", total)
		return
	}
	p.log.Info("stage started", "stage", name)
}

func (p *jsonProgress) Advance(n int64, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	before := p.done
	p.done += n
	reached := p.total > 0 && p.done >= p.total && before < p.total
	if time.Since(p.last) < time.Second && !reached {
		return
	}
	p.last = time.Now()
	attrs := []any{"stage", p.stage, "done", p.done}
	if p.total > 0 {
		attrs = append(attrs, "total", p.total)
		if left, ok := timeLeft(p.done, p.total, time.Since(p.start)); ok {
			attrs = append(attrs, "seconds_left", math.Round(left.Seconds()*10)/10)
		}
	}
	if detail != "" {
		attrs = append(attrs, "detail", detail)
	}
	p.log.Info("progress", attrs...)
}

// timeLeft extrapolates the stage's rate so far: elapsed·(total−done)/done.
// It is an estimate (an upper bound for EM, whose total is its iteration
// budget) and is not given before any work is done.
func timeLeft(done, total int64, elapsed time.Duration) (time.Duration, bool) {
	if done <= 0 || total <= 0 {
		return 0, false
	}
	if done >= total {
		return 0, true
	}
	return time.Duration(float64(elapsed) * float64(total-done) / float64(done)), true
}

func (p *jsonProgress) EndStage(name string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log.Info("stage finished", "stage", name, "seconds", d.Seconds())
}

func (p *jsonProgress) Info(msg string, kv ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log.Info(msg, kv...)
}

// NewPlain writes one human-readable line per stage and per
// notable event, without a live bar (text logs that are not a terminal).
func NewPlain(w io.Writer) Reporter {
	return &plainProgress{log: slog.New(slog.NewTextHandler(w, nil))}
}

type plainProgress struct {
	mu          sync.Mutex
	log         *slog.Logger
	last, start time.Time
	done, total int64
}

func (p *plainProgress) StartStage(name string, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done, p.total, p.start = 0, total, time.Now()
	p.log.Info("stage started", "stage", name)
}

func (p *plainProgress) Advance(n int64, detail string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	if time.Since(p.last) < 5*time.Second {
		return
	}
	p.last = time.Now()
	attrs := []any{"detail", detail}
	if p.total > 0 {
		attrs = append(attrs, "done", p.done, "total", p.total)
		if left, ok := timeLeft(p.done, p.total, time.Since(p.start)); ok {
			attrs = append(attrs, "time_left", left.Round(time.Second).String())
		}
	}
	p.log.Info("progress", attrs...)
}

func (p *plainProgress) EndStage(name string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log.Info("stage finished", "stage", name, "seconds", d.Seconds())
}

func (p *plainProgress) Info(msg string, kv ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log.Info(msg, kv...)
}
