package stream

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"trending/internal/setting"
	"trending/model/event"
)

// DefaultStart is DefaultConfig's Start: a fixed instant, so that a seed
// alone reproduces a stream.
var DefaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Limits of a Config.
const (
	MaxItems   = 1 << 30
	MaxServers = 1_000_000
	// MaxRate bounds views per second: one second's views are drawn and
	// summed in memory before its events go out.
	MaxRate = 10_000_000
)

// Config describes a stream. Start from DefaultConfig, which holds every
// default: a zero field means zero, and where zero cannot work (Items, Zipf,
// Rate, Servers, Start) NewGenerator refuses it by the field's name.
type Config struct {
	// Items is the catalog size. Items are named ItemPrefix+rank, rank 1 the
	// most viewed: V1, V2, ... Default 1,000,000; 1..MaxItems.
	Items int
	// Zipf is the exponent s: rank k gets a share proportional to k^-s.
	// Any s in (0, 10] works. Default 1.1.
	Zipf float64
	// Rate is views per second of event time (not events: pre-summing
	// turns the views of one item on one server in one second into one
	// event, so events per second are at most this). Fractional rates
	// accumulate: 0.5 is one view every other second. Default 50,000; must
	// be positive, at most MaxRate.
	Rate float64
	// Servers is how many video servers pre-sum their views (docs/requirements.md):
	// each view lands on a uniformly chosen server, and each server sends
	// one event per item per second with the sum. Default 500; at least 1.
	Servers int
	// Start is the event time of the first second, truncated to the
	// second. Default DefaultStart (2026-01-01T00:00:00Z); the zero time is
	// refused.
	Start time.Time
	// Duration is the span of event time to generate, a whole number of
	// seconds; 0 (the default) is endless.
	Duration time.Duration
	// Viral are items that take a share of views for a while (ParseViral).
	Viral []Viral
	// Late is the fraction of events, 0..1, whose event time is shifted
	// back by LateBy, as from a server that buffered them. Default 0: none.
	Late float64
	// LateBy is how far late events are shifted back. Default 2m. 0 shifts
	// them by nothing: they are still drawn (and counted late in loadgen's
	// Stats) but keep their time.
	LateBy time.Duration
	// Malformed is the number of malformed messages per valid event, 0..1
	// (0.001 is one in a thousand). They are extra messages drawn from a
	// random source of their own, so the valid events are the same as
	// without them (and the views the same whatever Late is). Default 0: none.
	Malformed float64
	// Seed makes the stream: the same Config gives the same records in the
	// same order. Default 0.
	Seed uint64
	// ItemPrefix prefixes the rank in item ids. Default "V"; empty names
	// items by their bare rank (1, 2, ...).
	ItemPrefix string
	// Regions are where the servers are: server s is in Regions[s mod
	// len(Regions)], and its events carry that region, so a region's share
	// of the views is its share of the servers (a region listed twice gets
	// twice as many). The views drawn are the same whatever Regions says.
	// Each is a valid event region (1 to 64 bytes, no control characters).
	// Default none: events carry no region.
	Regions []string
}

// DefaultConfig returns the documented defaults. It is the one place they
// live.
func DefaultConfig() Config {
	return Config{
		Items: 1_000_000, Zipf: 1.1, Rate: 50_000, Servers: 500, Start: DefaultStart,
		LateBy: 2 * time.Minute, ItemPrefix: "V",
	}
}

// invalid is a setting error for field (internal/setting) that also wraps
// ErrConfig.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrConfig, setting.Invalid(field, format, args...))
}

// Validate reports whether c can build a Generator; every error wraps
// ErrConfig and says what to change, and one about a single field also
// wraps setting.ErrConfig and names it.
func (c Config) Validate() error {
	d := DefaultConfig()
	frac := func(f float64) bool { return f >= 0 && f <= 1 } // false for NaN
	var errs []error
	if c.Items < 1 || c.Items > MaxItems {
		errs = append(errs, invalid("Items", "%d items: use 1..%d (default %d)", c.Items, MaxItems, d.Items))
	}
	if !(c.Zipf > 0 && c.Zipf <= MaxZipfExponent) { // also rejects NaN
		errs = append(errs, invalid("Zipf", "exponent %g: use a value in (0, %d] (default %g)", c.Zipf, MaxZipfExponent, d.Zipf))
	}
	if !(c.Rate > 0 && c.Rate <= MaxRate) {
		errs = append(errs, invalid("Rate", "rate %g views/s: use a positive rate up to %d (default %g)", c.Rate, MaxRate, d.Rate))
	}
	if c.Servers < 1 || c.Servers > MaxServers {
		errs = append(errs, invalid("Servers", "%d servers: use 1..%d (default %d)", c.Servers, MaxServers, d.Servers))
	}
	if c.Start.IsZero() {
		errs = append(errs, invalid("Start", "no start time: set one (default %s)", DefaultStart.Format(time.RFC3339)))
	}
	if c.Duration < 0 || c.Duration%time.Second != 0 {
		errs = append(errs, invalid("Duration", "%s: use a whole number of seconds, or 0 for endless", c.Duration))
	}
	if !frac(c.Late) {
		errs = append(errs, invalid("Late", "late fraction %g: use 0..1 (0.01 is 1%% of events)", c.Late))
	}
	if c.LateBy < 0 {
		errs = append(errs, invalid("LateBy", "%s: must not be negative", c.LateBy))
	}
	for _, r := range c.Regions {
		if r == "" {
			errs = append(errs, invalid("Regions", "an empty region: leave Regions empty for events without one"))
		} else if err := (event.Event{ItemID: "V", Count: 1, TS: DefaultStart, Region: r}).Validate(); err != nil {
			errs = append(errs, invalid("Regions", "region %q: %v", r, err))
		}
	}
	if !frac(c.Malformed) {
		errs = append(errs, invalid("Malformed", "malformed fraction %g: use 0..1 (0.001 is one message in a thousand)", c.Malformed))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	start := c.Start.UTC().Truncate(time.Second)
	if err := (event.Event{ItemID: c.ItemPrefix + strconv.Itoa(c.Items), Count: 1, TS: start}).Validate(); err != nil {
		return fmt.Errorf("%w: item prefix %q or start %s makes invalid events: %v", ErrConfig, c.ItemPrefix, start.Format(time.RFC3339), err)
	}
	end := start.Add(c.Duration)
	if err := (event.Event{ItemID: "V", Count: 1, TS: end}).Validate(); err != nil {
		return fmt.Errorf("%w: the stream ends at %s, outside what events allow: shorten --duration or move the start", ErrConfig, end.Format(time.RFC3339))
	}
	if c.Late > 0 {
		if err := (event.Event{ItemID: "V", Count: 1, TS: start.Add(-c.LateBy)}).Validate(); err != nil {
			return fmt.Errorf("%w: late events %s before the start fall before 2000-01-01: lower late-by", ErrConfig, c.LateBy)
		}
	}
	for _, v := range c.Viral {
		if err := v.validate(); err != nil {
			return fmt.Errorf("%w: viral %s: %v", ErrConfig, v, err)
		}
	}
	return checkOverlap(c.Viral)
}

// Record is one message of the stream: a valid event, or a malformed
// message for the dead-letter path.
type Record struct {
	// Key is the Kafka key: the item id (for malformed messages, a catalog
	// item's, so they spread over partitions like real ones).
	Key string
	// Event is the event when Raw is nil.
	Event event.Event
	// Raw, when not nil, is a malformed message's bytes, and Reason is what
	// event.Decode says about them.
	Raw    []byte
	Reason event.Reason
	// Late is true when the event's time was shifted back by LateBy.
	Late bool
}

// Valid reports whether the record is a valid event (Raw is nil).
func (r Record) Valid() bool { return r.Raw == nil }

// Generator produces a Config's stream one second of event time at a time.
// It does no I/O and reads no clock: the same Config gives the same records.
// It is not safe for concurrent use.
type Generator struct {
	cfg     Config
	zipf    *Zipf
	rng     *rand.Rand // views: items and servers
	late    *rand.Rand // late draws, apart so they never change the views
	bad     *rand.Rand // malformed draws, apart so they never change the events
	names   []string   // cached item ids by rank-1, filled lazily
	viral   []int      // item index of each viral item: negative, -1-i
	next    int64      // offset in seconds of the next second
	seconds int64      // seconds to generate; <0: endless
	carry   float64    // fractional views carried to the next second
	agg     map[aggKey]int32
	pend    []pending
	jsonBuf []byte
}

// aggKey is one (item, server) of the second being summed; item >= 0 is a
// catalog rank-1, item < 0 a viral item.
type aggKey struct{ item, server int32 }

type pending struct {
	aggKey
	count uint32
}

// maxNameCache bounds the item-id cache (16 bytes of string header and the
// id bytes per rank): ranks beyond it are formatted per event.
const maxNameCache = 1 << 21

// NewGenerator returns a Generator for cfg, or an error wrapping ErrConfig.
func NewGenerator(cfg Config) (*Generator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Start = cfg.Start.UTC().Truncate(time.Second)
	z, err := NewZipf(cfg.Items, cfg.Zipf)
	if err != nil {
		return nil, err
	}
	g := &Generator{
		cfg:     cfg,
		zipf:    z,
		rng:     rand.New(rand.NewPCG(cfg.Seed, 0x7472656e64696e67)), // "trending"
		late:    rand.New(rand.NewPCG(cfg.Seed, 0x6c617465)),         // "late"
		bad:     rand.New(rand.NewPCG(cfg.Seed, 0x626164)),           // "bad"
		names:   make([]string, min(cfg.Items, maxNameCache)),
		seconds: -1,
		agg:     make(map[aggKey]int32),
	}
	if cfg.Duration > 0 {
		g.seconds = int64(cfg.Duration / time.Second)
	}
	return g, nil
}

// Config returns the generator's configuration, Start in UTC truncated to the
// second.
func (g *Generator) Config() Config { return g.cfg }

// Next returns the event time of the next second NextSecond will generate.
func (g *Generator) Next() time.Time { return g.cfg.Start.Add(time.Duration(g.next) * time.Second) }

// Done reports whether the stream's Duration has been generated.
func (g *Generator) Done() bool { return g.seconds >= 0 && g.next >= g.seconds }

// ItemID returns the id of catalog rank k (1-based).
func (g *Generator) ItemID(rank int) string {
	if rank <= len(g.names) {
		if s := g.names[rank-1]; s != "" {
			return s
		}
		s := g.cfg.ItemPrefix + strconv.Itoa(rank)
		g.names[rank-1] = s
		return s
	}
	return g.cfg.ItemPrefix + strconv.Itoa(rank)
}

// NextSecond appends the records of the next second of event time to dst
// and returns it, with ok false (and dst unchanged) once the Duration is
// done. Valid events come in the order their (item, server) first got a
// view in the second; each malformed message follows the valid event it was
// drawn after.
func (g *Generator) NextSecond(dst []Record) (out []Record, ok bool) {
	if g.Done() {
		return dst, false
	}
	off := time.Duration(g.next) * time.Second
	sec := g.cfg.Start.Add(off)
	g.next++

	views := g.carry + g.cfg.Rate
	n := math.Floor(views)
	g.carry = views - n

	// Cumulative viral shares for this second.
	var cum [8]float64
	shares := cum[:0]
	var ids []int32
	acc := 0.0
	for i, v := range g.cfg.Viral {
		if s := v.ShareAt(off); s > 0 {
			acc += s
			shares = append(shares, acc)
			ids = append(ids, int32(-1-i))
		}
	}

	clear(g.agg)
	g.pend = g.pend[:0]
	servers := g.cfg.Servers
	for range int64(n) {
		var item int32
		picked := false
		if len(shares) > 0 {
			u := g.rng.Float64()
			for j, c := range shares {
				if u < c {
					item, picked = ids[j], true
					break
				}
			}
		}
		if !picked {
			item = int32(g.zipf.Sample(g.rng) - 1)
		}
		k := aggKey{item: item, server: int32(g.rng.IntN(servers))}
		if i, ok := g.agg[k]; ok && g.pend[i].count < event.MaxCount {
			g.pend[i].count++
			continue
		}
		g.agg[k] = int32(len(g.pend))
		g.pend = append(g.pend, pending{aggKey: k, count: 1})
	}

	for _, p := range g.pend {
		var id string
		if p.item < 0 {
			id = g.cfg.Viral[-1-p.item].Item
		} else {
			id = g.ItemID(int(p.item) + 1)
		}
		// A server's events carry its own millisecond within the second,
		// as a real server's clock would; the minute never changes.
		ts := sec.Add(time.Duration((int64(p.server)*997)%1000) * time.Millisecond)
		r := Record{Key: id, Event: event.Event{ItemID: id, Count: p.count, TS: ts}}
		if n := len(g.cfg.Regions); n > 0 {
			r.Event.Region = g.cfg.Regions[int(p.server)%n]
		}
		if g.cfg.Late > 0 && g.late.Float64() < g.cfg.Late {
			r.Event.TS = ts.Add(-g.cfg.LateBy)
			r.Late = true
		}
		dst = append(dst, r)
		if g.cfg.Malformed > 0 && g.bad.Float64() < g.cfg.Malformed {
			dst = append(dst, g.malformed(r.Event))
		}
	}
	return dst, true
}
