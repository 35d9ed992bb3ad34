package loadgen

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/hotset"
	"trending/internal/setting"
	"trending/internal/stream"
	"trending/model/event"
	"trending/model/salt"
)

// Writer sends messages; *kafka.Writer (eventlog.NewWriter) is one. Run
// calls it from one goroutine and relies on it being synchronous: when
// WriteMessages returns nil every message is acknowledged, and a
// kafka.WriteErrors says which ones were not.
type Writer interface {
	WriteMessages(ctx context.Context, msgs ...kafka.Message) error
}

// RunConfig configures Run. Start from DefaultRunConfig, which holds every
// default: a zero field means zero (see each field), and Run refuses a zero
// BatchSize by name.
type RunConfig struct {
	// Stream is the stream to produce. Default stream.DefaultConfig().
	Stream stream.Config
	// Speedup paces the stream: event time runs Speedup times faster than
	// the wall clock, so the views of event second s are sent at the wall
	// time start + (s+1)/Speedup, once that second is over, as a server
	// that pre-sums a second would. 1 (the default) is real time; 60 sends
	// an hour of event time a minute (and 60 times Rate views a wall
	// second). 0 means no pacing: as fast as the writer takes them.
	// Negative is refused.
	Speedup float64
	// Truth, when not nil, gets every valid event once the writer has
	// acknowledged it, so it is exactly what reached the log.
	Truth *stream.Truth
	// Progress, when not nil, is called every ProgressEvery and once at the
	// end with the stats so far, from a goroutine of Run's.
	Progress func(Stats)
	// ProgressEvery is the interval between Progress calls. Default 5s.
	// 0 means no calls along the way: Progress is called once, at the end.
	ProgressEvery time.Duration
	// BatchSize is the most messages per WriteMessages call, at least 1.
	// Default 10,000.
	BatchSize int
	// FlushTimeout bounds how long Run keeps writing what it had generated
	// when ctx is cancelled. Default 10s. 0 gives no grace: the writes in
	// flight are cancelled with ctx, as when the timeout runs out.
	FlushTimeout time.Duration
	// Salter keys the messages of salted (hot) items by their sub-keys (docs/scale-out.md,
	// "Hot keys"), and detects hot items when it has a threshold: at the wall clock of the
	// second being encoded. nil (the default) salts nothing.
	Salter *salt.Salter
	// Kafka, when set, makes Run ride out a Kafka outage: a write that fails with an
	// eventlog.Retryable error is retried (only its unacknowledged messages) with a bounded
	// backoff until it succeeds or ctx ends, the outage logged once by Kafka and shown as
	// trending_kafka_up{role}; Stats.Retried counts the messages written again (a write
	// that failed may still have reached the log, so the log can hold such a message twice;
	// Truth counts it once). nil (the default): a failed write ends Run with its error.
	Kafka *eventlog.Health
}

// DefaultRunConfig returns the documented defaults: the default stream in
// real time, progress every 5s, batches of 10,000 and a 10s flush. It is the
// one place they live.
func DefaultRunConfig() RunConfig {
	return RunConfig{
		Stream:        stream.DefaultConfig(),
		Speedup:       1,
		ProgressEvery: 5 * time.Second,
		BatchSize:     10_000,
		FlushTimeout:  10 * time.Second,
	}
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
	// Retried counts messages written again after a failed write (RunConfig.Kafka).
	Retried uint64
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

// invalid is a setting error for field (internal/setting) that also wraps
// stream.ErrConfig.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", stream.ErrConfig, setting.Invalid(field, format, args...))
}

// Validate reports whether c can run; every error wraps stream.ErrConfig,
// and one about a setting also setting.ErrConfig with the field's name
// ("BatchSize", "Stream.Items").
func (c RunConfig) Validate() error {
	d := DefaultRunConfig()
	var errs []error
	switch {
	case math.IsNaN(c.Speedup) || math.IsInf(c.Speedup, 0):
		errs = append(errs, invalid("Speedup", "%g: use a positive factor such as 1 or 60, or 0 for no pacing", c.Speedup))
	case c.Speedup < 0:
		errs = append(errs, invalid("Speedup", "%g must not be negative: use a positive factor such as 1 or 60, or 0 for no pacing", c.Speedup))
	}
	if c.ProgressEvery < 0 {
		errs = append(errs, invalid("ProgressEvery", "%s must not be negative: 0 reports only at the end (default %s)", c.ProgressEvery, d.ProgressEvery))
	}
	if c.BatchSize < 1 {
		errs = append(errs, invalid("BatchSize", "%d must be positive (default %d)", c.BatchSize, d.BatchSize))
	}
	if c.FlushTimeout < 0 {
		errs = append(errs, invalid("FlushTimeout", "%s must not be negative (default %s)", c.FlushTimeout, d.FlushTimeout))
	}
	if err := c.Stream.Validate(); err != nil {
		if es := setting.Errors(err); len(es) > 0 {
			for _, e := range es {
				errs = append(errs, invalid("Stream."+e.Field, "%s", e.Problem))
			}
		} else {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// chunk is one event-time second, encoded.
type chunk struct {
	sec    time.Time // the newest event second in it
	secs   int64     // how many event seconds it holds (unpaced seconds share a chunk)
	due    time.Time
	msgs   []kafka.Message
	events []event.Event // events[i] is msgs[i]'s when valid[i]
	valid  []bool
	late   []bool
}

// append adds a later second's messages to c.
func (c *chunk) append(o *chunk) {
	c.sec, c.due, c.secs = o.sec, o.due, c.secs+o.secs
	c.msgs = append(c.msgs, o.msgs...)
	c.events = append(c.events, o.events...)
	c.valid = append(c.valid, o.valid...)
	c.late = append(c.late, o.late...)
}

// Run produces the stream to w, keyed by item id, until its Duration is
// done or ctx is cancelled. On cancellation it stops generating, writes what
// it had already generated (at most a few seconds of event time, within
// FlushTimeout) and returns nil: a clean stop. It returns an error when
// the writer fails; the Truth then holds exactly the acknowledged events.
//
// Three goroutines: the generator (generate: encodes and paces one event
// second at a time into a small queue), the writer (this one: writeAll), and
// the progress reporter (report, when Progress is set). Run returns after all
// three have finished.
func Run(ctx context.Context, cfg RunConfig, w Writer) (Stats, error) {
	if err := cfg.Validate(); err != nil {
		return Stats{}, err
	}
	g, err := stream.NewGenerator(cfg.Stream)
	if err != nil {
		return Stats{}, err
	}
	p := &producer{cfg: cfg, w: w, start: time.Now()}

	// The generator stops when ctx ends, the stream ends, or a write fails.
	gctx, stopGen := context.WithCancel(ctx)
	defer stopGen()
	chunks := make(chan *chunk, 4)
	genDone := make(chan struct{})
	go func() {
		defer close(genDone)
		p.generate(gctx, ctx, g, chunks)
	}()

	// Writes use a context that outlives ctx by FlushTimeout, so a second
	// already generated is written whole rather than cut by Ctrl-C.
	wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer wcancel()
	stopFlush := context.AfterFunc(ctx, func() { time.AfterFunc(cfg.FlushTimeout, wcancel) })
	defer stopFlush()

	stopReport := p.startReport()
	werr := p.writeAll(wctx, chunks, stopGen)
	<-genDone
	stopReport()
	final := p.snapshot()
	if cfg.Progress != nil {
		cfg.Progress(final)
	}
	return final, werr
}

// producer is one Run: its settings, its writer and the stats so far.
type producer struct {
	cfg   RunConfig
	w     Writer
	start time.Time

	mu sync.Mutex // guards st: written by the writer, read by the reporter
	st Stats
}

// snapshot returns the stats so far.
func (p *producer) snapshot() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st
	s.Elapsed = time.Since(p.start)
	return s
}

// generate encodes one event second at a time into chunks, paced by Speedup, until the
// stream ends or gctx ends, then closes chunks. A second that is generated and due when ctx
// (the caller's) ends is still queued, so the writer flushes it with the rest; one whose
// time has not come is dropped.
func (p *producer) generate(gctx, ctx context.Context, g *stream.Generator, chunks chan<- *chunk) {
	defer close(chunks)
	var recs []stream.Record
	var pending *chunk // unpaced seconds not sent yet
	defer func() {
		if pending != nil && (gctx.Err() == nil || ctx.Err() != nil) {
			chunks <- pending // the stream ended, or the caller stopped it: flush them
		}
	}()
	for n := int64(0); ; n++ {
		if gctx.Err() != nil {
			return
		}
		sec := g.Next()
		var ok bool
		if recs, ok = g.NextSecond(recs[:0]); !ok {
			return
		}
		c := p.encode(sec, n, recs)
		if p.cfg.Speedup == 0 {
			// Unpaced: every second is due at once, so seconds share a write until it holds
			// BatchSize messages. One write per event second made a sparse stream (a week at
			// a view every 20 s) one round trip per event: minutes for 40,000 events.
			if pending != nil {
				pending.append(c)
				c = pending
			}
			if pending = c; len(c.msgs) < p.cfg.BatchSize {
				continue
			}
			pending = nil
		}
		if !c.due.IsZero() {
			if d := time.Until(c.due); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-gctx.Done():
					t.Stop()
					return // this second is not over yet: drop it
				case <-t.C:
				}
			}
		}
		select {
		case chunks <- c:
		case <-gctx.Done():
			if ctx.Err() != nil {
				chunks <- c // generated and due: flush it with the rest
			}
			return
		}
	}
}

// encode turns the n-th event second's records into messages, with when it is due.
func (p *producer) encode(sec time.Time, n int64, recs []stream.Record) *chunk {
	c := &chunk{sec: sec, secs: 1}
	if p.cfg.Speedup > 0 {
		c.due = p.start.Add(time.Duration(float64(n+1) * float64(time.Second) / p.cfg.Speedup))
	}
	c.msgs = make([]kafka.Message, len(recs))
	c.events = make([]event.Event, len(recs))
	c.valid = make([]bool, len(recs))
	c.late = make([]bool, len(recs))
	now := time.Now()
	for i, r := range recs {
		val := r.Raw
		if r.Valid() {
			val = r.Event.AppendJSON(make([]byte, 0, 64))
			c.events[i], c.valid[i], c.late[i] = r.Event, true, r.Late
		}
		c.msgs[i] = kafka.Message{Key: []byte(r.Key), Value: val}
		if r.Valid() {
			hotset.Key(p.cfg.Salter, c.msgs[i:i+1], now)
		}
	}
	return c
}

// writeAll writes every chunk until chunks closes. After a write fails it stops the
// generator and drains what was queued, and returns the error.
func (p *producer) writeAll(ctx context.Context, chunks <-chan *chunk, stopGen func()) error {
	var werr error
	for c := range chunks {
		if werr != nil {
			continue // drain so the generator can exit
		}
		if werr = p.writeChunk(ctx, c); werr != nil {
			stopGen()
		}
	}
	return werr
}

// startReport calls Progress every ProgressEvery until the returned stop is called (which
// waits for the reporter to end); without Progress, or with ProgressEvery 0, it does nothing.
func (p *producer) startReport() (stop func()) {
	if p.cfg.Progress == nil || p.cfg.ProgressEvery == 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(p.cfg.ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.cfg.Progress(p.snapshot())
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// writeChunk writes one second in batches and accounts for what was
// acknowledged. With RunConfig.Kafka a retryable failure is retried for the messages not
// acknowledged; without it the first failure is returned.
func (p *producer) writeChunk(ctx context.Context, c *chunk) error {
	cfg := p.cfg
	var pending []int // indexes into c.msgs of a batch still to write
	var batch []kafka.Message
	for lo := 0; lo < len(c.msgs); lo += cfg.BatchSize {
		hi := min(lo+cfg.BatchSize, len(c.msgs))
		pending = pending[:0]
		for i := lo; i < hi; i++ {
			pending = append(pending, i)
		}
		pause := eventlog.Backoff{Min: 200 * time.Millisecond, Max: 5 * time.Second}
		for attempt := 0; ; attempt++ {
			batch = batch[:0]
			for _, i := range pending {
				batch = append(batch, c.msgs[i])
			}
			err := p.w.WriteMessages(ctx, batch...)
			var werrs kafka.WriteErrors
			partial := errors.As(err, &werrs) && len(werrs) == len(batch)
			failed := pending[:0:0]
			p.mu.Lock()
			st := &p.st
			if attempt > 0 {
				st.Retried += uint64(len(batch))
			}
			for k, i := range pending {
				if err != nil && (!partial || werrs[k] != nil) {
					failed = append(failed, i)
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
			p.mu.Unlock()
			if err == nil {
				if cfg.Kafka != nil && attempt > 0 {
					cfg.Kafka.OK()
				}
				break
			}
			werr := fmt.Errorf("write %d messages of event second %s: %w", len(batch), c.sec.Format(time.RFC3339), err)
			if cfg.Kafka == nil || ctx.Err() != nil {
				return werr
			}
			if ferr := cfg.Kafka.Failed("write to Kafka", werr); ferr != nil {
				return ferr
			}
			if !pause.Wait(ctx) {
				return werr
			}
			pending = append(pending[:0], failed...)
		}
	}
	p.mu.Lock()
	p.st.Seconds += c.secs
	p.st.EventTime = c.sec
	if !c.due.IsZero() {
		p.st.Behind = max(0, time.Since(c.due))
	}
	p.mu.Unlock()
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
