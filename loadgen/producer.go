package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/stream"
	"trending/model/event"
)

// Writer sends messages; *kafka.Writer (eventlog.NewWriter) is one. Run
// calls it from one goroutine and relies on it being synchronous: when
// WriteMessages returns nil every message is acknowledged, and a
// kafka.WriteErrors says which ones were not.
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// RunConfig configures Run. Zero fields mean their documented defaults.
type RunConfig struct {
	// Stream is the stream to produce.
	Stream stream.Config
	// Speedup paces the stream: event time runs Speedup times faster than
	// the wall clock, so the views of event second s are sent at the wall
	// time start + (s+1)/Speedup, once that second is over, as a server
	// that pre-sums a second would. 1 is real time; 60 sends an hour of
	// event time a minute (and 60 times Rate views a wall second). A
	// negative value means no pacing: as fast as the writer takes them.
	// Default 1 (0 means the default).
	Speedup float64
	// Truth, when not nil, gets every valid event once the writer has
	// acknowledged it, so it is exactly what reached the log.
	Truth *stream.Truth
	// Progress, when not nil, is called every ProgressEvery and once at the
	// end with the stats so far, from a goroutine of Run's.
	Progress func(Stats)
	// ProgressEvery is the interval between Progress calls. Default 5s.
	ProgressEvery time.Duration
	// BatchSize is the most messages per WriteMessages call. Default 10,000.
	BatchSize int
	// FlushTimeout bounds how long Run keeps writing what it had generated
	// when ctx is cancelled. Default 10s.
	FlushTimeout time.Duration
}

// Stats says what Run has sent so far.
type Stats struct {
	// Elapsed is the wall time since Run started.
	Elapsed time.Duration
	// EventTime is the start of the newest event-time second sent.
	EventTime time.Time
	// Seconds is how many event-time seconds were sent in full.
	Seconds int64
	// Views is the sum of the counts of the valid events sent; Events their
	// number, and Late how many of them were shifted back.
	Views, Events, Late uint64
	// Malformed is the number of malformed messages sent.
	Malformed uint64
	// Messages and Bytes count every message sent (value bytes).
	Messages, Bytes uint64
	// Behind is how far sending lags the pace when it cannot keep up:
	// the wall time minus the time the newest second was due. Zero when
	// unpaced or on time.
	Behind time.Duration
}

// Rate returns per-second wall-clock rates: views, events and messages.
func (s Stats) Rate() (views, events, messages float64) {
	sec := s.Elapsed.Seconds()
	if sec <= 0 {
		return 0, 0, 0
	}
	return float64(s.Views) / sec, float64(s.Events) / sec, float64(s.Messages) / sec
}

// String is a one-line status for people.
func (s Stats) String() string {
	v, e, _ := s.Rate()
	line := fmt.Sprintf("%s elapsed, event time %s: %s views (%s/s), %s events (%s/s), %s late, %s malformed, %s",
		s.Elapsed.Round(100*time.Millisecond), s.EventTime.Format(time.RFC3339), human(float64(s.Views)), human(v),
		human(float64(s.Events)), human(e), human(float64(s.Late)), human(float64(s.Malformed)), humanBytes(s.Bytes))
	if s.Behind > time.Second {
		line += fmt.Sprintf(", %s behind the pace", s.Behind.Round(100*time.Millisecond))
	}
	return line
}

func (c RunConfig) withDefaults() RunConfig {
	if c.Speedup == 0 {
		c.Speedup = 1
	}
	if c.ProgressEvery == 0 {
		c.ProgressEvery = 5 * time.Second
	}
	if c.BatchSize == 0 {
		c.BatchSize = 10_000
	}
	if c.FlushTimeout == 0 {
		c.FlushTimeout = 10 * time.Second
	}
	return c
}

// Validate reports whether c can run; errors wrap stream.ErrConfig.
func (c RunConfig) Validate() error {
	c = c.withDefaults()
	switch {
	case math.IsNaN(c.Speedup) || math.IsInf(c.Speedup, 0):
		return fmt.Errorf("%w: speedup %g: use a positive factor such as 1 or 60, or a negative one for no pacing", stream.ErrConfig, c.Speedup)
	case c.ProgressEvery < 0 || c.BatchSize < 0 || c.FlushTimeout < 0:
		return fmt.Errorf("%w: progress interval, batch size and flush timeout must not be negative", stream.ErrConfig)
	}
	return c.Stream.Validate()
}

// chunk is one event-time second, encoded.
type chunk struct {
	sec    time.Time
	due    time.Time
	msgs   []kafka.Message
	events []event.Event // events[i] is msgs[i]'s when valid[i]
	valid  []bool
	late   []bool
}

// Run produces the stream to w, keyed by item id, until its Duration is
// done or ctx is cancelled. On cancellation it stops generating, writes what
// it had already generated (at most a few seconds of event time, within
// FlushTimeout) and returns nil: a clean stop. It returns an error when
// the writer fails; the Truth then holds exactly the acknowledged events.
func Run(ctx context.Context, cfg RunConfig, w Writer) (Stats, error) {
	if err := cfg.Validate(); err != nil {
		return Stats{}, err
	}
	cfg = cfg.withDefaults()
	g, err := stream.NewGenerator(cfg.Stream)
	if err != nil {
		return Stats{}, err
	}
	start := time.Now()

	var (
		mu sync.Mutex
		st Stats
	)
	snapshot := func() Stats {
		mu.Lock()
		defer mu.Unlock()
		s := st
		s.Elapsed = time.Since(start)
		return s
	}

	chunks := make(chan *chunk, 4)
	go func() { // generate and pace
		defer close(chunks)
		var recs []stream.Record
		for n := int64(0); ; n++ {
			if ctx.Err() != nil {
				return
			}
			var ok bool
			sec := g.Next()
			if recs, ok = g.NextSecond(recs[:0]); !ok {
				return
			}
			c := &chunk{sec: sec}
			if cfg.Speedup > 0 {
				c.due = start.Add(time.Duration(float64(n+1) * float64(time.Second) / cfg.Speedup))
			}
			c.msgs = make([]kafka.Message, len(recs))
			c.events = make([]event.Event, len(recs))
			c.valid = make([]bool, len(recs))
			c.late = make([]bool, len(recs))
			for i, r := range recs {
				val := r.Raw
				if r.Valid() {
					val = r.Event.AppendJSON(make([]byte, 0, 64))
					c.events[i], c.valid[i], c.late[i] = r.Event, true, r.Late
				}
				c.msgs[i] = kafka.Message{Key: []byte(r.Key), Value: val}
			}
			if !c.due.IsZero() {
				if d := time.Until(c.due); d > 0 {
					t := time.NewTimer(d)
					select {
					case <-ctx.Done():
						t.Stop()
						return // this second is not over yet: drop it
					case <-t.C:
					}
				}
			}
			select {
			case chunks <- c:
			case <-ctx.Done():
				chunks <- c // generated and due: flush it with the rest
				return
			}
		}
	}()

	// Writes use a context that outlives ctx by FlushTimeout, so a second
	// already generated is written whole rather than cut by Ctrl-C.
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer wcancel()
	stopFlush := context.AfterFunc(ctx, func() { time.AfterFunc(cfg.FlushTimeout, wcancel) })
	defer stopFlush()

	progressDone := make(chan struct{})
	var pwg sync.WaitGroup
	if cfg.Progress != nil {
		pwg.Add(1)
		go func() {
			defer pwg.Done()
			t := time.NewTicker(cfg.ProgressEvery)
			defer t.Stop()
			for {
				select {
				case <-progressDone:
					return
				case <-t.C:
					cfg.Progress(snapshot())
				}
			}
		}()
	}

	var werr error
	for c := range chunks {
		if werr != nil {
			continue // drain so the generator can exit
		}
		werr = writeChunk(wctx, w, cfg, c, &mu, &st)
	}
	close(progressDone)
	pwg.Wait()
	final := snapshot()
	if cfg.Progress != nil {
		cfg.Progress(final)
	}
	return final, werr
}

// writeChunk writes one second in batches and accounts for what was
// acknowledged.
func writeChunk(ctx context.Context, w Writer, cfg RunConfig, c *chunk, mu *sync.Mutex, st *Stats) error {
	for lo := 0; lo < len(c.msgs); lo += cfg.BatchSize {
		hi := min(lo+cfg.BatchSize, len(c.msgs))
		err := w.WriteMessages(ctx, c.msgs[lo:hi]...)
		var werrs kafka.WriteErrors
		partial := errors.As(err, &werrs) && len(werrs) == hi-lo
		mu.Lock()
		for i := lo; i < hi; i++ {
			if err != nil && (!partial || werrs[i-lo] != nil) {
				continue
			}
			st.Messages++
			st.Bytes += uint64(len(c.msgs[i].Value))
			if !c.valid[i] {
				st.Malformed++
				continue
			}
			ev := c.events[i]
			st.Events++
			st.Views += uint64(ev.Count)
			if c.late[i] {
				st.Late++
			}
			if cfg.Truth != nil {
				cfg.Truth.Add(ev)
			}
		}
		mu.Unlock()
		if err != nil {
			return fmt.Errorf("write %d messages of event second %s: %w", hi-lo, c.sec.Format(time.RFC3339), err)
		}
	}
	mu.Lock()
	st.Seconds++
	st.EventTime = c.sec
	if !c.due.IsZero() {
		st.Behind = max(0, time.Since(c.due))
	}
	mu.Unlock()
	return nil
}

func human(v float64) string {
	switch {
	case v >= 1e9:
		return fmt.Sprintf("%.2fG", v/1e9)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.1fk", v/1e3)
	default:
		return fmt.Sprintf("%.0f", v)
	}
}

func humanBytes(b uint64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
	default:
		return fmt.Sprintf("%.1f KiB", float64(b)/(1<<10))
	}
}
