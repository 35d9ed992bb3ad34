package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Progress of long one-shot commands: on a terminal a bar (done of total, rate and ETA,
// the current item) redrawn in place; anywhere else (logs, Airflow, a pipe) the one line per
// step the command always printed, which a log keeps and a bar would garble.

// terminal reports whether w is a terminal.
func terminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// meter is a progress bar on w for steps of what ("windows"), or nil when w is not a
// terminal: the caller prints its lines instead.
type meter struct {
	bar  *progressbar.ProgressBar
	done bool // finished: the next step starts a new bar (a job's next run)
}

func newMeter(w io.Writer, what string) *meter {
	if !terminal(w) {
		return nil
	}
	return &meter{bar: progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetItsString(what),
		progressbar.OptionShowIts(),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionFullWidth(),
		// The finished bar stays as the summary (windows, rate, time), on its own line.
		progressbar.OptionOnCompletion(func() { fmt.Fprintln(w) }),
	)}
}

// step shows done of total, with the step just finished; the last step finishes the bar,
// which stays as its summary, so the command's report follows on a clean line.
func (m *meter) step(done, total int, current string) {
	if m.done {
		m.bar.Reset()
		m.done = false
	}
	if m.bar.GetMax() != total {
		m.bar.ChangeMax(total)
	}
	m.bar.Describe(current)
	_ = m.bar.Set(done)
	if done >= total {
		m.finish()
	}
}

// finish draws the bar complete and ends its line (once).
func (m *meter) finish() {
	if m != nil && !m.done {
		_ = m.bar.Finish()
		m.done = true
	}
}

// logWriter is the log's output: stderr, and while a progress bar is drawn on the same
// terminal, each line is written above the bar (cleared first, drawn again after), so the
// roles' logs and the bar do not tear each other.
type logWriter struct {
	mu  sync.Mutex
	w   io.Writer
	bar *progressbar.ProgressBar
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.bar == nil {
		return l.w.Write(p)
	}
	_ = l.bar.Clear()
	n, err := l.w.Write(p)
	_ = l.bar.RenderBlank()
	return n, err
}

// attach makes m's bar the one log lines print above, nil for none (m finished).
func (l *logWriter) attach(m *meter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.bar = nil
	if m != nil {
		l.bar = m.bar
	}
}
