package topics

import (
	"trending/model/topicrules"

	"errors"
	"fmt"
	"runtime"
	"testing"
	"time"

	"trending/internal/setting"
)

func TestDedupe(t *testing.T) {
	d, err := NewDedupe(DedupeConfig{Capacity: 1024, TTL: topicrules.DefaultDedupeTTL})
	if err != nil {
		t.Fatal(err)
	}
	a, b := PairHash("u1", "marathon"), PairHash("u2", "marathon")
	if a == PairHash("u1", "marathonx") || a == PairHash("u1marathon", "") {
		t.Fatal("pair hash ignores the boundary between user and topic")
	}
	steps := []struct {
		name   string
		h      uint64
		minute int64
		want   bool
	}{
		{"first", a, 1000, true},
		{"repeat same minute", a, 1000, false},
		{"other user counts", b, 1000, true},
		{"repeat 14 minutes later", a, 1014, false},
		{"late event before the pair's minute", a, 995, false},
		{"15 minutes later counts again", a, 1015, true},
		{"and is remembered from then", a, 1020, false},
	}
	for _, s := range steps {
		if got := d.First(s.h, s.minute); got != s.want {
			t.Fatalf("%s: First = %v, want %v", s.name, got, s.want)
		}
	}
	st := d.Stats()
	if st.Counted != 3 || st.Duplicates != 4 || st.Evicted != 0 {
		t.Errorf("stats %+v", st)
	}
}

// TestDedupeMemoryFixed floods a million distinct pairs: the table's memory does not move
// (it is allocated once), the heap does not grow, and pairs from the last minutes, which
// fit easily, are still remembered.
func TestDedupeMemoryFixed(t *testing.T) {
	d, err := NewDedupe(DefaultDedupeConfig())
	if err != nil {
		t.Fatal(err)
	}
	before := d.Bytes()
	if before != 4<<20 {
		t.Fatalf("default table is %d bytes, want 4 MiB", before)
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapAlloc
	const flood = 1_000_000
	for i := range flood {
		// 271 events a second: about 16,000 a minute.
		d.First(PairHash(fmt.Sprintf("bot%d", i%50), fmt.Sprintf("junk%d", i)), int64(i/16_000))
	}
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if d.Bytes() != before || d.Len() > DefaultDedupeCapacity {
		t.Fatalf("table grew: %d -> %d bytes, %d entries", before, d.Bytes(), d.Len())
	}
	if grew := int64(ms.HeapAlloc) - int64(heap0); grew > 1<<20 {
		t.Errorf("heap grew %d bytes during the flood", grew)
	}
	// The last 15 minutes hold 240,000 pairs, under half the table: every one of them is
	// still a duplicate.
	last := int64((flood - 1) / 16_000)
	for i := flood - 200_000; i < flood; i += 997 {
		if d.First(PairHash(fmt.Sprintf("bot%d", i%50), fmt.Sprintf("junk%d", i)), last) {
			t.Fatalf("recent pair %d forgotten", i)
		}
	}
	t.Logf("stats after %d distinct pairs: %+v, %d slots occupied", flood, d.Stats(), d.Len())
}

// TestDedupeEvicts: a table too small for the live pairs evicts instead of growing, and
// says so.
func TestDedupeEvicts(t *testing.T) {
	d, _ := NewDedupe(DedupeConfig{Capacity: 64, TTL: topicrules.DefaultDedupeTTL})
	for i := range 1000 {
		d.First(PairHash("u", fmt.Sprint(i)), 0)
	}
	if d.Len() != 64 || d.Stats().Evicted == 0 {
		t.Errorf("len %d, stats %+v", d.Len(), d.Stats())
	}
}

func TestDedupeConfigValidate(t *testing.T) {
	if err := DefaultDedupeConfig().Validate(); err != nil {
		t.Fatalf("DefaultDedupeConfig: %v", err)
	}
	for _, tc := range []struct {
		c     DedupeConfig
		field string
	}{
		{DedupeConfig{Capacity: 100, TTL: topicrules.DefaultDedupeTTL}, "Capacity"},
		{DedupeConfig{Capacity: 4, TTL: topicrules.DefaultDedupeTTL}, "Capacity"},
		{DedupeConfig{TTL: topicrules.DefaultDedupeTTL}, "Capacity"},
		{DedupeConfig{Capacity: DefaultDedupeCapacity, TTL: 30 * time.Second}, "TTL"},
		{DedupeConfig{Capacity: DefaultDedupeCapacity, TTL: 90 * time.Second}, "TTL"},
		{DedupeConfig{Capacity: DefaultDedupeCapacity, TTL: 48 * time.Hour}, "TTL"},
		{DedupeConfig{Capacity: DefaultDedupeCapacity}, "TTL"},
	} {
		err := tc.c.Validate()
		if es := setting.Errors(err); !errors.Is(err, topicrules.ErrConfig) || !errors.Is(err, setting.ErrConfig) || len(es) != 1 || es[0].Field != tc.field {
			t.Errorf("%+v: Validate = %v, want one setting error naming %s", tc.c, err, tc.field)
		}
		if _, err := NewDedupe(tc.c); !errors.Is(err, setting.ErrConfig) {
			t.Errorf("%+v: NewDedupe = %v, want it refused", tc.c, err)
		}
	}
}

func TestWeightAndShare(t *testing.T) {
	if topicrules.Tenths(true) != 3 || topicrules.Tenths(false) != 10 {
		t.Fatal("tenths")
	}
	wc := topicrules.DefaultWeightConfig()
	if !wc.IsNew(24*time.Hour) || wc.IsNew(60*24*time.Hour) {
		t.Error("IsNew with the 30-day default")
	}
	s := NewShare(15)
	// 10 established mentions and 40 new ones in minute 100: 100 vs 120 tenths, 54.5% new.
	for range 10 {
		s.Add(100, topicrules.Tenths(false), false)
	}
	for range 40 {
		s.Add(100, topicrules.Tenths(true), true)
	}
	share, total := s.Value(100)
	if total != 220 || share < 0.545 || share > 0.546 {
		t.Fatalf("share %v total %v", share, total)
	}
	// Ten more new mentions a minute later cross 60%: 150 of 250.
	for range 10 {
		s.Add(101, topicrules.Tenths(true), true)
	}
	if share, _ := s.Value(101); share != 0.6 {
		t.Fatalf("share %v, want 0.6", share)
	}
	// Minute 100 leaves the 15-minute window at minute 115.
	if share, total := s.Value(115); total != 30 || share != 1 {
		t.Errorf("after expiry: share %v total %v", share, total)
	}
	s.Add(116, 10, false) // reuses minute 101's slot
	if _, total := s.Value(116); total != 10 {
		t.Errorf("slot not reset: total %v", total)
	}
	s.Add(50, 10, false) // too old
	if _, total := s.Value(116); total != 10 {
		t.Errorf("old minute counted: total %v", total)
	}
}
