package topics

import (
	"trending/model/topicrules"

	"fmt"
	"math"
	"time"
)

// SizingInput is what the trending-topics sizing is computed from. DefaultSizingInput holds
// the scenario of docs/requirements.md ("Trending topics"); every field documents its default.
type SizingInput struct {
	// Width, Depth and CounterBytes shape one minute sketch. Defaults 65,536, 5 and 4 (the
	// design's 4-byte cells, enough for a minute; speed/sketch's are 8).
	Width, Depth, CounterBytes int
	// RingMinutes is the minute sketches kept per worker. Default 60.
	RingMinutes int
	// WindowMinutes is the list window. Default 15.
	WindowMinutes int
	// PeakEventsPerSecond is one worker's peak rate. Default 271.
	PeakEventsPerSecond float64
	// KeysPerEvent is the keys each event adds: the (region, topic) key and the worldwide
	// key. Default 2.
	KeysPerEvent int
	// Workers, BaselineDays: the fleet and the baseline depth. Defaults 128 and 7.
	Workers, BaselineDays int
	// PairBytes is one dedupe entry in the design's set (hash and expiry). Default 16.
	PairBytes float64
	// Floor and BigTopic are the counts the error is compared with. Defaults 300 and 4,000.
	Floor, BigTopic float64
	// Lists, ListSize and TopicBytes size the served lists. Defaults 13, 50 and 100.
	Lists, ListSize int
	TopicBytes      float64
}

// DefaultSizingInput returns the figures of docs/requirements.md ("Trending topics").
func DefaultSizingInput() SizingInput {
	return SizingInput{
		Width: 1 << 16, Depth: 5, CounterBytes: 4, RingMinutes: 60, WindowMinutes: 15,
		PeakEventsPerSecond: 271, KeysPerEvent: 2, Workers: 128, BaselineDays: 7,
		PairBytes: 16, Floor: 300, BigTopic: 4000, Lists: 13, ListSize: 50, TopicBytes: 100,
	}
}

// Validate reports whether in can be sized; the error wraps topicrules.ErrConfig.
func (in SizingInput) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{
		{"width", float64(in.Width)}, {"depth", float64(in.Depth)}, {"counter bytes", float64(in.CounterBytes)},
		{"ring minutes", float64(in.RingMinutes)}, {"window minutes", float64(in.WindowMinutes)},
		{"peak events per second", in.PeakEventsPerSecond}, {"keys per event", float64(in.KeysPerEvent)},
		{"workers", float64(in.Workers)}, {"baseline days", float64(in.BaselineDays)},
		{"pair bytes", in.PairBytes}, {"floor", in.Floor}, {"big topic", in.BigTopic},
		{"lists", float64(in.Lists)}, {"list size", float64(in.ListSize)}, {"topic bytes", in.TopicBytes},
	} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("%w: sizing %s %v must be a positive number", topicrules.ErrConfig, f.name, f.v)
		}
	}
	return nil
}

// Sizing is the trending-topics sizing arithmetic, every figure derived from a SizingInput.
type Sizing struct {
	Input SizingInput `json:"input"`
	// MinuteSketchBytes is Width x Depth x CounterBytes: 1.31 MB. RingBytes is RingMinutes
	// of them per worker: 79 MB. Neither depends on the number of topics.
	MinuteSketchBytes float64 `json:"minute_sketch_bytes"`
	RingBytes         float64 `json:"ring_bytes"`
	// PerCountError is e/Width: how much one added count can inflate another key's
	// estimate (0.0000415); Probability is 1 - e^-Depth (99.3%).
	PerCountError float64 `json:"per_count_error"`
	Probability   float64 `json:"probability"`
	// CountsPerMinute is a worker's peak counts a minute: events x KeysPerEvent (32,500).
	CountsPerMinute float64 `json:"counts_per_minute"`
	// OvercountMinute and OvercountWindow bound one estimate's overcount for a minute
	// (1.35 mentions) and for the window (20).
	OvercountMinute float64 `json:"overcount_minute"`
	OvercountWindow float64 `json:"overcount_window"`
	// SingleKeyOvercountMinute is the minute's bound had each event added one key: the
	// regional key doubles the counts and so the error, which is why the sketch is twice
	// as wide as the topics alone would need.
	SingleKeyOvercountMinute float64 `json:"single_key_overcount_minute"`
	// FloorReads is how high a topic at the floor may read (320); BigTopicError the bound
	// as a fraction of a big topic (0.5%).
	FloorReads    float64 `json:"floor_reads"`
	BigTopicError float64 `json:"big_topic_error"`
	// BaselineSketches is Workers x 24 x BaselineDays hourly sketches (21,504), of
	// BaselineBytes in all (28 GB); BaselineOvercount is an hourly sketch's bound scaled to
	// the window (the same 20).
	BaselineSketches  int     `json:"baseline_sketches"`
	BaselineBytes     float64 `json:"baseline_bytes"`
	BaselineOvercount float64 `json:"baseline_overcount"`
	// The hourly sketches live in the object store (internal/topicstore); a worker holds
	// BaselineMemoryBytes of them: the BaselineDays same-hour sketches of the current hour,
	// the open hour and the one closing (its last minutes still in the window), and one
	// presence bit a cell per closed hour of the baseline depth for the hold rule (18.7 MB
	// against 220 MB for a week in memory). BaselineStoreBytesPerDay is what the fleet
	// writes a day, one sketch per worker and hour (4.0 GB, at most: the encoding skips empty
	// cells), with BaselinePutsPerDay PUTs and BaselineGetsPerDay GETs (each hour change
	// loads BaselineDays sketches).
	BaselineMemoryBytes      float64 `json:"baseline_memory_bytes"`
	BaselineStoreBytesPerDay float64 `json:"baseline_store_bytes_per_day"`
	BaselinePutsPerDay       int     `json:"baseline_puts_per_day"`
	BaselineGetsPerDay       int     `json:"baseline_gets_per_day"`
	// DedupePairs are the live (user, topic) pairs a worker holds at the peak (244,000),
	// DedupeBytes their memory at 16 bytes a pair (3.9 MB).
	DedupePairs float64 `json:"dedupe_pairs"`
	DedupeBytes float64 `json:"dedupe_bytes"`
	// ListsBytes is the served lists together (65 KB).
	ListsBytes float64 `json:"lists_bytes"`
}

// ComputeSizing validates in and works out the sizing figures.
func ComputeSizing(in SizingInput) (Sizing, error) {
	if err := in.Validate(); err != nil {
		return Sizing{}, err
	}
	s := Sizing{Input: in}
	w, win := float64(in.Width), float64(in.WindowMinutes)
	s.MinuteSketchBytes = w * float64(in.Depth) * float64(in.CounterBytes)
	s.RingBytes = float64(in.RingMinutes) * s.MinuteSketchBytes
	s.PerCountError = math.E / w
	s.Probability = 1 - math.Exp(-float64(in.Depth))
	perMinuteEvents := in.PeakEventsPerSecond * 60
	s.CountsPerMinute = perMinuteEvents * float64(in.KeysPerEvent)
	s.OvercountMinute = s.PerCountError * s.CountsPerMinute
	s.OvercountWindow = s.OvercountMinute * win
	s.SingleKeyOvercountMinute = s.PerCountError * perMinuteEvents
	s.FloorReads = in.Floor + s.OvercountWindow
	s.BigTopicError = s.OvercountWindow / in.BigTopic
	s.BaselineSketches = in.Workers * 24 * in.BaselineDays
	s.BaselineBytes = float64(s.BaselineSketches) * s.MinuteSketchBytes
	// An hour holds 60 minutes of counts; the baseline is scaled from an hour to the window.
	s.BaselineOvercount = s.PerCountError * s.CountsPerMinute * 60 * win / 60
	cells := w * float64(in.Depth)
	s.BaselineMemoryBytes = float64(in.BaselineDays+2)*s.MinuteSketchBytes + float64(24*in.BaselineDays)*cells/8
	s.BaselineStoreBytesPerDay = float64(in.Workers*24) * s.MinuteSketchBytes
	s.BaselinePutsPerDay = in.Workers * 24
	s.BaselineGetsPerDay = in.Workers * 24 * in.BaselineDays
	s.DedupePairs = in.PeakEventsPerSecond * win * 60
	s.DedupeBytes = s.DedupePairs * in.PairBytes
	s.ListsBytes = float64(in.Lists*in.ListSize) * in.TopicBytes
	return s, nil
}

// WidthFor returns the narrowest minute-sketch width, a power of two of at least 1,024, at
// which a worker taking mentionsPerSecond mentions a second, each adding KeysPerEvent (2)
// keys, overcounts a list window by at most share x floor (with probability 1 - e^-Depth):
// e/width x mentionsPerSecond x 2 x window seconds <= share x floor. Seed 001's worker (271
// a second at the peak, 15 minutes, 10% of the floor of 300) gets its 65,536 (a bound of
// 20 mentions); trending up's load (500 a second over 4 partitions) gets 32,768 (18.7).
func WidthFor(mentionsPerSecond float64, window time.Duration, floor, share float64) int {
	counts := mentionsPerSecond * float64(DefaultSizingInput().KeysPerEvent) * window.Seconds()
	w := 1 << 10
	for w < 1<<30 && math.E/float64(w)*counts > share*floor {
		w <<= 1
	}
	return w
}
