package topicrules

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

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
