package topics

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestDedupe(t *testing.T) {
	d, err := NewDedupe(DedupeConfig{Capacity: 1024})
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
	d, err := NewDedupe(DedupeConfig{})
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
	d, _ := NewDedupe(DedupeConfig{Capacity: 64})
	for i := range 1000 {
		d.First(PairHash("u", fmt.Sprint(i)), 0)
	}
	if d.Len() != 64 || d.Stats().Evicted == 0 {
		t.Errorf("len %d, stats %+v", d.Len(), d.Stats())
	}
}

func TestDedupeConfigValidate(t *testing.T) {
	for _, c := range []DedupeConfig{{Capacity: 100}, {Capacity: 4}, {TTL: 30 * time.Second}, {TTL: 90 * time.Second}, {TTL: 48 * time.Hour}} {
		if err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("%+v: Validate = %v", c, err)
		}
	}
}

func TestWeightAndShare(t *testing.T) {
	if Tenths(true) != 3 || Tenths(false) != 10 {
		t.Fatal("tenths")
	}
	var wc WeightConfig
	if !wc.IsNew(24*time.Hour) || wc.IsNew(60*24*time.Hour) {
		t.Error("IsNew with the 30-day default")
	}
	s := NewShare(15)
	// 10 established mentions and 40 new ones in minute 100: 100 vs 120 tenths, 54.5% new.
	for range 10 {
		s.Add(100, Tenths(false), false)
	}
	for range 40 {
		s.Add(100, Tenths(true), true)
	}
	share, total := s.Value(100)
	if total != 220 || share < 0.545 || share > 0.546 {
		t.Fatalf("share %v total %v", share, total)
	}
	// Ten more new mentions a minute later cross 60%: 150 of 250.
	for range 10 {
		s.Add(101, Tenths(true), true)
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

func TestBlocklistMatch(t *testing.T) {
	b := NewBlocklist("spam", "#Scam", "  ")
	for topic, want := range map[string]bool{
		"spam": true, "#Spam": true, "cheap_spam_now": true, "SCAM": true,
		"spammer": false, "marathon": false, "": false, "Über-spam": true,
	} {
		if got := b.Blocked(topic); got != want {
			t.Errorf("Blocked(%q) = %v, want %v", topic, got, want)
		}
	}
	if b.Len() != 2 {
		t.Errorf("Len = %d", b.Len())
	}
	if NewBlocklist().Blocked("anything") {
		t.Error("empty list blocks")
	}
}

// TestBlocklistReload: a change to the file applies on the next Reload; an unchanged file
// is not re-read; a deleted file keeps the old terms.
func TestBlocklistReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "blocklist.txt")
	write := func(s string, mod time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	write("# banned terms\nspam\n\n// old\n#badtag\n", t0)
	b, err := OpenBlocklist(path)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Blocked("spam") || !b.Blocked("#BadTag") || b.Blocked("scam") || b.Len() != 2 {
		t.Fatalf("initial terms wrong: len %d", b.Len())
	}
	if r, err := b.Reload(); r || err != nil {
		t.Fatalf("unchanged file reloaded: %v %v", r, err)
	}
	write("spam\nscam\n", t0.Add(time.Minute))
	if r, err := b.Reload(); !r || err != nil {
		t.Fatalf("changed file not reloaded: %v %v", r, err)
	}
	if !b.Blocked("scam") || b.Blocked("badtag") {
		t.Error("new terms not in force")
	}
	os.Remove(path)
	if _, err := b.Reload(); err == nil {
		t.Error("missing file: no error")
	}
	if !b.Blocked("scam") {
		t.Error("missing file lifted the bans")
	}
	if _, err := OpenBlocklist(path); err == nil {
		t.Error("OpenBlocklist of a missing file succeeded")
	}
}

func TestReviewQueue(t *testing.T) {
	r := NewReview(3)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	if s := r.Hold("quake", "jp", ReasonNewTopic, t0, 3000, 61); s != Pending {
		t.Fatalf("new hold %v", s)
	}
	r.Hold("quake", "", ReasonNewTopic, t0.Add(time.Minute), 3100, 63)
	r.Hold("bots", "us", ReasonNewAccounts, t0.Add(2*time.Minute), 900, 9)
	if err := r.Approve("quake", "ed", t0.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := r.Reject("bots", "ed", t0.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := r.Approve("nothing", "ed", t0); !errors.Is(err, ErrNotHeld) {
		t.Errorf("approve unknown: %v", err)
	}
	// A decision sticks when the topic is held again.
	if s := r.Hold("quake", "us", ReasonNewTopic, t0.Add(4*time.Minute), 1, 1); s != Approved {
		t.Errorf("re-hold of approved: %v", s)
	}
	q := r.List("")
	if len(q) != 2 || q[0].Topic != "quake" || strings.Join(q[0].Regions, ",") != ",jp,us" || q[0].By != "ed" {
		t.Fatalf("list %+v", q)
	}
	// Bounded: past max the oldest decided entry goes first, not the pending ones.
	r.Hold("a", "us", ReasonNewTopic, t0.Add(5*time.Minute), 1, 1)
	r.Hold("b", "us", ReasonNewTopic, t0.Add(6*time.Minute), 1, 1)
	if _, ok := r.Status("bots"); ok {
		t.Error("the oldest decided entry survived the trim")
	}
	if len(r.List(Pending)) != 2 {
		t.Errorf("pending %v", r.List(Pending))
	}
	// JSON round trip.
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	r2 := NewReview(0)
	if err := json.Unmarshal(b, r2); err != nil {
		t.Fatal(err)
	}
	b2, _ := json.Marshal(r2)
	if !bytes.Equal(b, b2) {
		t.Errorf("round trip differs:\n%s\n%s", b, b2)
	}
	// Prune: decisions and idle pending entries older than the TTL go.
	if n := r2.Prune(t0.Add(9*24*time.Hour), 0); n != 3 {
		t.Errorf("pruned %d, want 3", n)
	}
	for _, bad := range []string{`{`, `{"version":2,"max":1,"held":[]}`, `{"version":1,"max":0,"held":[]}`,
		`{"version":1,"max":5,"held":[{"topic":"a","status":"maybe"}]}`,
		`{"version":1,"max":5,"held":[{"topic":"a","status":"pending"},{"topic":"a","status":"pending"}]}`} {
		if err := NewReview(0).UnmarshalJSON([]byte(bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

func FuzzReviewDecode(f *testing.F) {
	r := NewReview(5)
	r.Hold("quake", "jp", ReasonNewTopic, time.Unix(1e9, 0).UTC(), 3000, 61)
	b, _ := json.Marshal(r)
	f.Add(b)
	f.Add([]byte(`{"version":1,"max":1,"held":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		r := NewReview(0)
		if err := r.UnmarshalJSON(b); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// Whatever decodes re-encodes and decodes to the same queue.
		out, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		r2 := NewReview(0)
		if err := r2.UnmarshalJSON(out); err != nil {
			t.Fatalf("re-decode: %v", err)
		}
		if len(r2.List("")) != len(r.List("")) {
			t.Fatal("entries lost")
		}
	})
}

func FuzzParseBlocklist(f *testing.F) {
	f.Add("spam\n#tag\n# comment\n// c\n")
	f.Add("Über\r\n\x00x")
	f.Fuzz(func(t *testing.T, s string) {
		terms, err := ParseBlocklist(strings.NewReader(s))
		if err != nil {
			return
		}
		b := NewBlocklist()
		b.terms.Store(&terms)
		for term := range terms {
			if term == "" || normalize(term) != term {
				t.Fatalf("term %q not normalised", term)
			}
			if !b.Blocked(term) || !b.Blocked("#"+asciiUpper(term)) {
				t.Fatalf("term %q does not block itself", term)
			}
		}
	})
}

func asciiUpper(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' {
			return r - 32
		}
		return r
	}, s)
}
