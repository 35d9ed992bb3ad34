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
