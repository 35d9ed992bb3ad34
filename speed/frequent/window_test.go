package frequent

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestWindowSlides pushes random buckets, expires random amounts, and checks
// after every step that the window's summary bounds the truth of exactly the
// buckets left in it, and that its bound is within N/(m+1).
func TestWindowSlides(t *testing.T) {
	for seed := range uint64(12) {
		r := rand.New(rand.NewPCG(seed, 99))
		m := []int{1, 8, 50}[seed%3]
		w, err := NewWindow(Config{Capacity: m})
		if err != nil {
			t.Fatal(err)
		}
		type kept struct {
			start int64
			truth map[string]uint64
		}
		var in []kept
		start := int64(0)
		for step := range 300 {
			start += 1 + int64(r.IntN(3))
			keys, counts, truth := zipfStream(r, 50+r.IntN(400), 20+r.IntN(2000), 1.05+r.Float64(), 1+r.IntN(5))
			s := mustNew(t, m)
			for i, k := range keys {
				s.AddString(k, counts[i])
			}
			s.Compact()
			if err := w.Push(start, s); err != nil {
				t.Fatal(err)
			}
			in = append(in, kept{start, truth})
			if r.IntN(2) == 0 {
				from := start - int64(r.IntN(40))
				w.Expire(from)
				for len(in) > 0 && in[0].start < from {
					in = in[1:]
				}
			}
			if w.Len() != len(in) {
				t.Fatalf("seed %d step %d: %d buckets, want %d", seed, step, w.Len(), len(in))
			}
			all := map[string]uint64{}
			for _, b := range in {
				for k, v := range b.truth {
					all[k] += v
				}
			}
			checkBounds(t, fmt.Sprintf("seed %d m %d step %d", seed, m, step), w.Summary(), all)
		}
	}
}

func TestWindowRefuses(t *testing.T) {
	w, _ := NewWindow(Config{Capacity: 4})
	if err := w.Push(5, mustNew(t, 4)); err != nil {
		t.Fatal(err)
	}
	if err := w.Push(5, mustNew(t, 4)); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("same start twice: %v", err)
	}
	if err := w.Push(6, mustNew(t, 3)); !errors.Is(err, ErrIncompatible) {
		t.Fatalf("other capacity: %v", err)
	}
	w.Expire(100)
	if w.Len() != 0 || w.Summary().Total() != 0 {
		t.Fatal("expired window not empty")
	}
}

// TestRestoreWindowAnswersAlike saves a sliding window at every step (Buckets, each
// summary through its encoding), restores it, and checks that the restored window and the
// original answer the same summary then and after the same further pushes and expiries:
// a restored speed worker publishes what one that never stopped would.
func TestRestoreWindowAnswersAlike(t *testing.T) {
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 7))
		m := []int{2, 16}[seed%2]
		w, _ := NewWindow(Config{Capacity: m})
		start := int64(0)
		step := func(ws ...*Window) {
			start++
			keys, counts, _ := zipfStream(r, 100, 20+r.IntN(500), 1.1, 1+r.IntN(3))
			s := mustNew(t, m)
			s.AddCounts(keys, counts)
			s.Compact()
			for _, w := range ws {
				if err := w.Push(start, s.Clone()); err != nil {
					t.Fatal(err)
				}
				if start%5 == 0 {
					w.Expire(start - 7)
				}
			}
		}
		for i := range 60 {
			step(w)
			starts, sums, nFront := w.Buckets()
			copies := make([]*Summary, len(sums))
			for j, s := range sums {
				b, err := s.MarshalBinary()
				if err != nil {
					t.Fatal(err)
				}
				copies[j] = new(Summary)
				if err := copies[j].UnmarshalBinary(b); err != nil {
					t.Fatal(err)
				}
			}
			back, err := RestoreWindow(Config{Capacity: m}, starts, copies, nFront)
			if err != nil {
				t.Fatal(err)
			}
			if !back.Summary().Equal(w.Summary()) {
				t.Fatalf("seed %d step %d: restored window answers otherwise", seed, i)
			}
			twin := w
			for range 1 + r.IntN(8) {
				step(twin, back)
			}
			if !back.Summary().Equal(twin.Summary()) {
				t.Fatalf("seed %d step %d: restored window drifts after pushes", seed, i)
			}
		}
	}
}

// TestSummaryFrom checks SummaryFrom against a copy of the window expired to the same
// start, on the bounds of the buckets it keeps.
func TestSummaryFrom(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	w, _ := NewWindow(Config{Capacity: 8})
	var truths []map[string]uint64
	for start := range int64(40) {
		keys, counts, truth := zipfStream(r, 200, 300, 1.2, 3)
		s := mustNew(t, 8)
		s.AddCounts(keys, counts)
		s.Compact()
		if err := w.Push(start, s); err != nil {
			t.Fatal(err)
		}
		truths = append(truths, truth)
		if start%7 == 6 {
			w.Expire(start - 10)
		}
		lo := max(0, start-int64(w.Len())+1)
		for from := lo; from <= start+1; from++ {
			all := map[string]uint64{}
			for _, tr := range truths[from:] {
				for k, v := range tr {
					all[k] += v
				}
			}
			got := w.SummaryFrom(from)
			checkBounds(t, fmt.Sprintf("start %d from %d", start, from), got, all)
			var n uint64
			for _, v := range all {
				n += v
			}
			if got.Total() != n {
				t.Fatalf("start %d from %d: total %d, want %d", start, from, got.Total(), n)
			}
		}
	}
}
