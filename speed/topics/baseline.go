package topics

import (
	"fmt"
	"maps"
	"slices"

	"trending/model/topicrules"
	"trending/speed/sketch"
)

// The hourly baseline (docs/topics.md, "Baseline in the object store"). Every mention is
// added to its hour's sketch. Once no mention of an hour can be counted any more (its last
// minute left the window), the hour is closed: its presence bitmap (the cells above its
// error bound) stays for the hold rule, and its sketch waits in Unsaved until the caller
// has written it to the object store and called Saved. The expected count reads the
// same-hour sketches of the BaselineDays previous days: from memory when still unsaved,
// else as loaded by the caller (NeedBaseline, SetBaseline) at each hour change and after a
// restore. The State does no I/O; speed/worker does it outside the partition's lock with
// internal/topicstore.

// dayState is what the State knows of one day's same-hour sketch for the current baseline.
type dayState uint8

const (
	dayWanted      dayState = iota // not asked for yet
	dayLoaded                      // in base
	dayMissing                     // the store has none: left out of the mean
	dayUnavailable                 // the store could not be read: left out until a read succeeds
)

// HourSketch is a closed hour's sketch, by Unix hour. It is never changed once closed, so
// it may be encoded without the State's lock.
type HourSketch struct {
	Hour   int64
	Sketch *sketch.Sketch
}

// BaselineStatus says what the current expected counts are made of.
type BaselineStatus struct {
	// Hour is the clock hour (Unix hours) whose same-hour baseline is in use; -1 before any
	// mention.
	Hour int64
	// Days are the days whose same-hour sketch is in the mean (loaded, or still in memory).
	// Missing: the store has none (a young deployment, an idle partition); Unavailable: the
	// store could not be read, so the mean has fewer days than it should until a retry
	// succeeds; Pending: not asked for yet.
	Days, Missing, Unavailable, Pending int
	// MaxOvercount bounds how far an expected count may read high, in mentions (the mean of
	// the days' sketch bounds, scaled to the window; 0 with no days): with the hourly
	// sketches at the minute width it is about the window's bound.
	MaxOvercount float64
}

// Degraded reports whether the store failed to give a day: the expected counts then come
// from the days in memory only, and the surge scores of such a list may read high.
func (b BaselineStatus) Degraded() bool { return b.Unavailable > 0 }

func (b BaselineStatus) String() string {
	s := fmt.Sprintf("hour %d: %d days, %d missing, %d unavailable, %d pending, expected bound %.1f",
		b.Hour, b.Days, b.Missing, b.Unavailable, b.Pending, b.MaxOvercount)
	return s
}

// closeHours closes every open hour none of whose minutes can still be counted: the
// oldest minute a mention may still land in is s.minute-len(ring)+1.
func (s *State) closeHours() {
	open := s.minute - int64(len(s.ring)) + 1
	for h, sk := range s.hours {
		if (h+1)*60 > open {
			continue
		}
		delete(s.hours, h)
		s.closed[h] = sk
		s.seen[h] = sk.Presence(uint64(sk.ErrorBound().MaxOvercount))
	}
	oldest := s.minute/60 - int64(s.cfg.BaselineDays)*24
	for h := range s.closed {
		if h < oldest {
			delete(s.closed, h)
		}
	}
	if over := len(s.closed) - s.cfg.UnsavedHours; over > 0 {
		for _, h := range slices.Sorted(maps.Keys(s.closed))[:over] {
			delete(s.closed, h)
			s.dropped++
		}
	}
	for h := range s.seen {
		if h < oldest {
			delete(s.seen, h)
		}
	}
}

// moveBaseline starts the baseline of a new current hour: every day is wanted again, except
// those still in memory (closed, unsaved).
func (s *State) moveBaseline() {
	cur := s.minute / 60
	if cur == s.baseHour {
		return
	}
	s.baseHour = cur
	clear(s.base)
	s.baseWant = make(map[int64]dayState, s.cfg.BaselineDays)
	for d := 1; d <= s.cfg.BaselineDays; d++ {
		s.baseWant[cur-int64(d)*24] = dayWanted
	}
}

// baseline returns the same-hour sketches of hour cur's baseline in hour order: loaded ones
// and those still in memory.
func (s *State) baseline(cur int64) []*sketch.Sketch {
	var out []*sketch.Sketch
	for d := s.cfg.BaselineDays; d >= 1; d-- {
		h := cur - int64(d)*24
		if sk := s.closed[h]; sk != nil {
			out = append(out, sk)
		} else if sk := s.base[h]; sk != nil && cur == s.baseHour {
			out = append(out, sk)
		}
	}
	return out
}

// seenBefore reports whether a closed hour before the previous one counted the key beyond
// that hour's error bound. The previous hour is not history: a topic that took off at 10:50
// is still new at 11:05.
func (s *State) seenBefore(h uint64, cur int64) bool {
	for hour, p := range s.seen {
		if hour < cur-1 && p.ContainsHash(h) {
			return true
		}
	}
	return false
}

// UnsavedDropped returns how many closed hours were dropped before the object store had
// them (Config.UnsavedHours); not part of the snapshot.
func (s *State) UnsavedDropped() uint64 { return s.dropped }

// Unsaved returns the closed hours not saved yet, oldest first: write each to the object
// store (internal/topicstore) and call Saved. The sketches are never changed again, so they
// may be encoded without the State's lock.
func (s *State) Unsaved() []HourSketch {
	out := make([]HourSketch, 0, len(s.closed))
	for _, h := range slices.Sorted(maps.Keys(s.closed)) {
		out = append(out, HourSketch{Hour: h, Sketch: s.closed[h]})
	}
	return out
}

// Saved records that hour's sketch is in the object store: it leaves memory, unless the
// current baseline reads it (then it moves there).
func (s *State) Saved(hour int64) {
	sk := s.closed[hour]
	if sk == nil {
		return
	}
	delete(s.closed, hour)
	if _, want := s.baseWant[hour]; want {
		s.base[hour], s.baseWant[hour] = sk, dayLoaded
	}
}

// NeedBaseline returns the hours (Unix hours, oldest first) of the current baseline to load
// from the object store: those not asked for yet, and with retry those whose read failed.
// Hours still in memory are not asked for.
func (s *State) NeedBaseline(retry bool) []int64 {
	var out []int64
	for h, st := range s.baseWant {
		if s.closed[h] != nil {
			continue
		}
		if st == dayWanted || retry && st == dayUnavailable {
			out = append(out, h)
		}
	}
	slices.Sort(out)
	return out
}

// SetBaseline gives the State a loaded hour of its baseline: sk the hour's sketch, or nil
// with err nil when the store has none (the day is left out of the mean), or err when the
// store could not be read (left out, and Baseline says so, until a retry succeeds). An hour
// the current baseline does not want (the hour moved on meanwhile) is ignored; so is a
// sketch of another depth or seed, which is an error.
func (s *State) SetBaseline(hour int64, sk *sketch.Sketch, err error) error {
	if _, want := s.baseWant[hour]; !want {
		return nil
	}
	switch {
	case err != nil:
		s.baseWant[hour] = dayUnavailable
	case sk == nil:
		s.baseWant[hour] = dayMissing
	default:
		if c := sk.Config(); c.Depth != s.cfg.Depth || c.Seed != s.cfg.Seed || c.Conservative {
			s.baseWant[hour] = dayMissing
			return fmt.Errorf("%w: hour %d's sketch is %dx%d seed %d, the state's depth %d seed %d",
				topicrules.ErrConfigMismatch, hour, c.Depth, c.Width, c.Seed, s.cfg.Depth, s.cfg.Seed)
		}
		s.base[hour], s.baseWant[hour] = sk, dayLoaded
	}
	return nil
}

// Baseline returns what the current expected counts are made of.
func (s *State) Baseline() BaselineStatus {
	b := BaselineStatus{Hour: s.baseHour}
	if s.baseHour < 0 {
		return b
	}
	var bounds []float64
	for _, sk := range s.baseline(s.baseHour) {
		bounds = append(bounds, sk.ErrorBound().MaxOvercount/10)
	}
	b.Days = len(bounds)
	b.MaxOvercount = topicrules.Expected(bounds, s.cfg.Window)
	for h, st := range s.baseWant {
		if s.closed[h] != nil {
			continue
		}
		switch st {
		case dayMissing:
			b.Missing++
		case dayUnavailable:
			b.Unavailable++
		case dayWanted:
			b.Pending++
		}
	}
	return b
}
