package main

import (
	"log/slog"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressEvery is how often a load without a terminal logs its progress.
const progressEvery = 5 * time.Second

// progress reports a long load: a bar when stderr is a terminal, a log line
// every progressEvery otherwise. It is used by one goroutine.
type progress struct {
	bar         *progressbar.ProgressBar // nil when stderr is not a terminal
	log         *slog.Logger
	what, unit  string
	total, done int64
	last        time.Time // of the last log line
}

func newProgress(log *slog.Logger, what, unit string, total int64) *progress {
	p := &progress{log: log, what: what, unit: unit, total: total, last: time.Now()}
	if term.IsTerminal(int(os.Stderr.Fd())) {
		if unit == "bytes" {
			p.bar = progressbar.DefaultBytes(total, what)
		} else {
			p.bar = progressbar.Default(total, what)
		}
	}
	return p
}

func (p *progress) add(n int64) {
	p.done += n
	if p.bar != nil {
		_ = p.bar.Add64(n)
		return
	}
	if now := time.Now(); now.Sub(p.last) >= progressEvery {
		p.last = now
		pct := 0.0
		if p.total > 0 {
			pct = 100 * float64(p.done) / float64(p.total)
		}
		p.log.Info("loading", "what", p.what, p.unit, p.done, "total", p.total, "percent", int(pct))
	}
}

// Write counts bytes read through an io.TeeReader.
func (p *progress) Write(b []byte) (int, error) {
	p.add(int64(len(b)))
	return len(b), nil
}

func (p *progress) finish() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
