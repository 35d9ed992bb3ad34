package viewcap

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

type key struct {
	account, item string
	hour          int64
}

// TestAgainstBruteForce: random events (accounts, items, hours moving forward with late
// ones within the kept hours) admit exactly min(sum, N) per (account, item, hour), as the
// batch's sum(least(c, N)) does, whatever the order; anonymous events are never capped; a
// snapshot restored midway continues the same.
func TestAgainstBruteForce(t *testing.T) {
	for seed := range uint64(5) {
		r := rand.New(rand.NewPCG(seed, 9))
		const n = 7
		tb, err := New(Config{Views: n, Slots: 16384, KeepHours: 1})
		if err != nil {
			t.Fatal(err)
		}
		sums := map[key]uint64{}
		var admitted, want uint64
		base := int64(1_794_650_000_000) / 3_600_000 * 3_600_000
		for i := range 20000 {
			hour := base + int64(i/5000)*3_600_000
			ts := hour + r.Int64N(3_600_000)
			if i%5000 > 100 && r.IntN(10) == 0 {
				ts -= 3_600_000 // late, into the hour before (kept)
			}
			acc := fmt.Sprintf("a%d", r.IntN(50))
			if r.IntN(20) == 0 {
				acc = ""
			}
			item := fmt.Sprintf("V%d", r.IntN(40))
			c := uint32(1 + r.IntN(4))
			admitted += uint64(tb.Admit([]byte(acc), []byte(item), ts, c))
			if acc == "" {
				want += uint64(c)
			} else {
				sums[key{acc, item, floorDiv(ts, 3_600_000)}] += uint64(c)
			}
			if i == 12345 { // a checkpoint and a restore
				b, _ := tb.MarshalBinary()
				back, _ := New(tb.Config())
				if err := back.UnmarshalBinary(b); err != nil {
					t.Fatal(err)
				}
				tb = back
			}
		}
		var capped uint64
		for _, s := range sums {
			want += min(s, n)
			capped += s - min(s, n)
		}
		if admitted != want || tb.Capped != capped || tb.Full != 0 || tb.Late != 0 {
			t.Fatalf("seed %d: admitted %d, want %d; capped %d, want %d; full %d", seed, admitted, want, tb.Capped, capped, tb.Full)
		}
	}
}

// TestFullAdmitsUncapped: a table with no free slot admits an event uncapped and counts it.
func TestFullAdmitsUncapped(t *testing.T) {
	tb, _ := New(Config{Views: 1, Slots: 1024, KeepHours: 0})
	ts := int64(1_794_650_000_000)
	for i := range 1024 * 4 {
		tb.Admit([]byte(fmt.Sprint("a", i)), []byte("V"), ts, 1)
	}
	if tb.Full == 0 || tb.Len() > 1024 {
		t.Fatalf("full %d, len %d: the table should be full", tb.Full, tb.Len())
	}
	full := tb.Full
	if got := tb.Admit([]byte("new-account"), []byte("V"), ts, 5); got != 5 && tb.Full == full {
		t.Fatalf("at the bound: admitted %d", got)
	}
	// The next hour reuses the expired slots.
	next := ts + 3_600_000
	if got := tb.Admit([]byte("x"), []byte("V"), next, 5); got != 1 {
		t.Fatalf("next hour: admitted %d, want the cap 1", got)
	}
}

func TestSnapshotRefusals(t *testing.T) {
	tb, _ := New(Config{Views: 3, Slots: 1024, KeepHours: 1})
	tb.Admit([]byte("a"), []byte("V"), 1_794_650_000_000, 9)
	b, _ := tb.MarshalBinary()
	other, _ := New(Config{Views: 4, Slots: 1024, KeepHours: 1})
	if err := other.UnmarshalBinary(b); err == nil {
		t.Fatal("a snapshot of another cap was restored")
	}
	b[len(b)-6] ^= 1
	if err := tb.UnmarshalBinary(b); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("a flipped bit: %v, want ErrCorrupt", err)
	}
	if off, _ := New(Config{}); off != nil {
		t.Fatal("Views 0 is caps off: nil")
	}
}

// TestLaterThanKept: an event older than the kept hours is admitted uncapped and counted.
func TestLaterThanKept(t *testing.T) {
	tb, _ := New(Config{Views: 2, Slots: 1024, KeepHours: 1})
	h := int64(1_794_650_000_000) / 3_600_000 * 3_600_000
	tb.Admit([]byte("a"), []byte("V"), h, 1)
	if got := tb.Admit([]byte("a"), []byte("V"), h-2*3_600_000, 5); got != 5 || tb.Late != 1 {
		t.Fatalf("two hours late: admitted %d, late %d", got, tb.Late)
	}
	if got := tb.Admit([]byte("a"), []byte("V"), h-3_600_000, 5); got != 2 || tb.Late != 1 {
		t.Fatalf("one hour late (kept): admitted %d, late %d", got, tb.Late)
	}
}

// BenchmarkAdmit is the cost a capped event adds to the speed layer's count: one Admit of a
// known or new (account, item) pair in a table a quarter and half full.
func BenchmarkAdmit(b *testing.B) {
	for _, load := range []float64{0.25, 0.5} {
		b.Run(fmt.Sprintf("load=%.2f", load), func(b *testing.B) {
			const slots = 1 << 20
			tb, _ := New(Config{Views: 10, Slots: slots, KeepHours: 2})
			ts := int64(1_794_650_000_000)
			n := int(load * slots)
			accounts := make([][]byte, n)
			for i := range accounts {
				accounts[i] = []byte(fmt.Sprintf("account-%08d", i))
				tb.Admit(accounts[i], []byte("V123456"), ts, 1)
			}
			item := []byte("V123456")
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				tb.Admit(accounts[i%n], item, ts, 1)
			}
		})
	}
}

// BenchmarkMarshal is the caps' part of a checkpoint, taken under the partition's lock: the
// default 2^20 slots half full.
func BenchmarkMarshal(b *testing.B) {
	tb, _ := New(Config{Views: 10, Slots: 1 << 20, KeepHours: 2})
	ts := int64(1_794_650_000_000)
	for i := range 1 << 19 {
		tb.Admit([]byte(fmt.Sprintf("account-%08d", i)), []byte("V1"), ts, 1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	var size int
	for range b.N {
		out, _ := tb.MarshalBinary()
		size = len(out)
	}
	b.ReportMetric(float64(size), "bytes")
}

// BenchmarkClone is what a checkpoint holds the partition's lock for with caps on: a copy of
// the default 2^20 slots.
func BenchmarkClone(b *testing.B) {
	tb, _ := New(Config{Views: 10, Slots: 1 << 20, KeepHours: 2})
	b.ReportAllocs()
	for range b.N {
		_ = tb.Clone()
	}
}
