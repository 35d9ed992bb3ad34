package moderation

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)

func TestRemoveRestore(t *testing.T) {
	l := NewList()
	if err := l.Restore("V1", "mistake", "alice", t0); !errors.Is(err, ErrNotRemoved) {
		t.Fatalf("restore of an item never removed: %v, want ErrNotRemoved", err)
	}
	for _, c := range []struct{ item, reason, by string }{{"", "spam", "a"}, {"V1", " ", "a"}, {"V1", "spam", ""}} {
		if err := l.Remove(c.item, c.reason, c.by, t0); !errors.Is(err, ErrInvalid) {
			t.Errorf("Remove(%q, %q, %q) = %v, want ErrInvalid", c.item, c.reason, c.by, err)
		}
	}
	if err := l.Remove("V1", "spam", "alice", t0); err != nil {
		t.Fatal(err)
	}
	if !l.Removed().Has("V1") || l.Removed().Has("V2") {
		t.Fatalf("removed set %v", l.Removed().Items())
	}
	if err := l.Restore("V1", "appeal granted", "bob", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if l.Removed().Has("V1") || l.Removed().Len() != 0 {
		t.Fatalf("restored item still removed: %v", l.Removed().Items())
	}
	d, _ := l.Get("V1")
	if d.Removed || d.By != "bob" || d.Reason != "appeal granted" {
		t.Fatalf("decision %+v", d)
	}
}

// TestMergeOrderIndependent merges random decisions in random orders: every replica ends with
// the same list, and a restore is not undone by an older copy that still says removed.
func TestMergeOrderIndependent(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var all []Decision
	for range 200 {
		all = append(all, Decision{Item: []string{"A", "B", "C", "D"}[r.IntN(4)], Removed: r.IntN(2) == 0,
			Reason: []string{"spam", "abuse"}[r.IntN(2)], By: []string{"alice", "bob"}[r.IntN(2)], At: t0.Add(time.Duration(r.IntN(20)) * time.Second)})
	}
	var want []byte
	for trial := range 20 {
		reps := make([]*List, 3)
		for i := range reps {
			reps[i] = NewList()
		}
		for _, i := range r.Perm(len(all)) {
			rep := reps[r.IntN(len(reps))]
			rep.mu.Lock()
			rep.put(all[i])
			rep.mu.Unlock()
		}
		for _, i := range r.Perm(3) {
			for _, j := range r.Perm(3) {
				reps[i].Merge(reps[j])
			}
		}
		reps[0].Merge(reps[1])
		reps[0].Merge(reps[2])
		got, _ := json.Marshal(reps[0])
		if trial == 0 {
			want = got
		} else if string(got) != string(want) {
			t.Fatalf("trial %d: merge depends on order:\n%s\n%s", trial, got, want)
		}
	}
	old := NewList()
	old.Remove("X", "spam", "alice", t0)
	l := NewList()
	l.Merge(old)
	l.Restore("X", "ok", "bob", t0.Add(time.Second))
	l.Merge(old)
	if l.Removed().Has("X") {
		t.Fatal("an older copy brought a removal back")
	}
}

func TestJSONRoundTrip(t *testing.T) {
	l := NewList()
	l.Remove("V1", "spam", "alice", t0)
	l.Remove("V2", "copyright", "bob", t0)
	l.Restore("V2", "licence shown", "bob", t0.Add(time.Hour))
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	back := NewList()
	if err := json.Unmarshal(b, back); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Decisions(), l.Decisions()) {
		t.Fatalf("round trip: %+v, want %+v", back.Decisions(), l.Decisions())
	}
	for _, bad := range []string{`{"version":2,"decisions":[]}`, `{"version":1,"decisions":[{"item":""}]}`, `{"version":1,"x":1}`, `[`} {
		if err := NewList().UnmarshalJSON([]byte(bad)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", bad, err)
		}
	}
}

func TestTopAndDigest(t *testing.T) {
	s := NewSet("B", "D")
	got := Top([]string{"A", "B", "C", "D", "E"}, s, 3, func(x string) string { return x })
	if !slices.Equal(got, []string{"A", "C", "E"}) {
		t.Fatalf("Top = %v", got)
	}
	if s.Want(3) != 5 {
		t.Fatalf("Want(3) = %d", s.Want(3))
	}
	var none *Set
	if none.Has("A") || none.Digest() != "" || NewSet().Digest() != "" || !NewSet().Equal(none) {
		t.Fatal("the empty set")
	}
	if NewSet("A", "B").Digest() != NewSet("B", "A").Digest() || NewSet("A").Digest() == NewSet("B").Digest() {
		t.Fatal("digest is not of the contents")
	}
}
