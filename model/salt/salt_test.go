package salt_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"trending/internal/setting"
	"trending/model/salt"
)

var t0 = time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)

func TestKeyAndHeader(t *testing.T) {
	if got := salt.Key("V7", 0); got != "V7" {
		t.Fatalf("sub-key 0: %q, want the item itself", got)
	}
	if got := salt.Key("#tag", 3); got != "#tag#3" {
		t.Fatalf("sub-key 3: %q", got)
	}
	for _, c := range []struct{ i, n int }{{0, 2}, {1, 2}, {255, 256}} {
		i, n, err := salt.ParseHeader(salt.HeaderValue(c.i, c.n))
		if err != nil || i != c.i || n != c.n {
			t.Fatalf("ParseHeader(HeaderValue(%d, %d)) = %d, %d, %v", c.i, c.n, i, n, err)
		}
	}
	for _, bad := range []string{"", "1", "2/2", "-1/4", "0/1", "0/257", "a/4", "1/b", "1/4/5"} {
		if _, _, err := salt.ParseHeader([]byte(bad)); err == nil {
			t.Errorf("ParseHeader(%q): no error", bad)
		}
	}
}

func TestParseItems(t *testing.T) {
	got, err := salt.ParseItems(" premiere=8, V7 ,#go=2")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[{premiere 8 0001-01-01 00:00:00 +0000 UTC config} {V7 4 0001-01-01 00:00:00 +0000 UTC config} {#go 2 0001-01-01 00:00:00 +0000 UTC config}]" {
		t.Fatalf("ParseItems: %v", got)
	}
	if got, err := salt.ParseItems(""); got != nil || err != nil {
		t.Fatalf("ParseItems(\"\") = %v, %v: want nothing", got, err)
	}
	for spec, want := range map[string]string{
		"a=1":        "ways 1",
		"a=300":      "ways 300",
		"a=x":        "not a number",
		"a,b,a":      "listed twice",
		"a,,b":       `item ""`,
		"a\x01b=4":   "control characters",
		"ok,bad=9e9": "not a number",
	} {
		_, err := salt.ParseItems(spec)
		if err == nil || !errors.Is(err, setting.ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseItems(%q): %v, want a setting error mentioning %q", spec, err, want)
		}
	}
}

func TestEntryWire(t *testing.T) {
	e := salt.Entry{Item: "V7", Ways: 8, Until: t0, By: "ingest"}
	b, err := e.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := salt.DecodeEntry(b)
	if err != nil || got != e {
		t.Fatalf("round trip: %+v, %v; want %+v", got, err, e)
	}
	for _, bad := range []string{`{`, `{"item":"","ways":4}`, `{"item":"x","ways":1}`, `{"item":"x"}`} {
		if _, err := salt.DecodeEntry([]byte(bad)); !errors.Is(err, salt.ErrEntry) {
			t.Errorf("DecodeEntry(%s): %v, want ErrEntry", bad, err)
		}
	}
}

func TestSetPut(t *testing.T) {
	s := salt.NewSet(salt.Entry{Item: "cfg", Ways: 8})
	if s.Put(salt.Entry{Item: "cfg", Ways: 4, Until: t0.Add(time.Hour)}) {
		t.Fatal("a detected entry replaced a configured one")
	}
	if !s.Put(salt.Entry{Item: "d", Ways: 4, Until: t0.Add(time.Minute)}) {
		t.Fatal("a new entry was not added")
	}
	if s.Put(salt.Entry{Item: "d", Ways: 16, Until: t0}) {
		t.Fatal("an earlier Until replaced a later one")
	}
	if !s.Put(salt.Entry{Item: "d", Ways: 16, Until: t0.Add(time.Hour)}) {
		t.Fatal("a later Until did not replace an earlier one")
	}
	for _, c := range []struct {
		item string
		at   time.Time
		want int
	}{{"cfg", t0.Add(1000 * time.Hour), 8}, {"d", t0.Add(59 * time.Minute), 16}, {"d", t0.Add(time.Hour), 0}, {"none", t0, 0}} {
		if got := s.Ways(c.item, c.at); got != c.want {
			t.Errorf("Ways(%s, %v) = %d, want %d", c.item, c.at, got, c.want)
		}
	}
	if got := s.Entries(t0.Add(time.Hour)); len(got) != 1 || got[0].Item != "cfg" {
		t.Fatalf("entries in force after d lapsed: %v", got)
	}
}

// TestSalterSpreads: a salted item's messages take its sub-keys in turn (every one of them
// within N messages, evenly over many), with the header naming the sub-key; others keep their
// key and no header.
func TestSalterSpreads(t *testing.T) {
	s, err := salt.NewSalter(salt.DefaultConfig(), salt.NewSet(salt.Entry{Item: "hot", Ways: 4}), nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for range 400 {
		k, h := s.Key("hot", t0)
		i, n, err := salt.ParseHeader(h)
		if err != nil || n != 4 || k != salt.Key("hot", i) {
			t.Fatalf("key %q header %q (%v): want sub-key i of 4 with its header", k, h, err)
		}
		seen[k]++
	}
	for i := range 4 {
		if seen[salt.Key("hot", i)] != 100 {
			t.Fatalf("sub-keys %v: want 100 messages each", seen)
		}
	}
	if k, h := s.Key("cold", t0); k != "cold" || h != nil {
		t.Fatalf("unsalted item keyed %q with header %q", k, h)
	}
}

// TestSalterDetects: an item that reaches the threshold within one wall second is salted at
// once, handed to the hot callback once per half hold while it stays hot, and lapses after
// the hold; an item under the threshold in every second is never salted.
func TestSalterDetects(t *testing.T) {
	cfg := salt.DefaultConfig()
	cfg.Threshold, cfg.Ways, cfg.Hold, cfg.By = 100, 8, time.Minute, "test"
	var mu sync.Mutex
	var shared []salt.Entry
	s, err := salt.NewSalter(cfg, salt.NewSet(), func(e salt.Entry) { mu.Lock(); shared = append(shared, e); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	// 99 messages a second for a minute: never hot.
	for sec := range 60 {
		for range 99 {
			if _, h := s.Key("warm", t0.Add(time.Duration(sec)*time.Second)); h != nil {
				t.Fatalf("warm item salted at second %d", sec)
			}
		}
	}
	// The 100th message of a second is the first salted one.
	at := t0.Add(2 * time.Minute)
	for i := range 100 {
		_, h := s.Key("hot", at)
		if (h != nil) != (i == 99) {
			t.Fatalf("message %d of the second salted: %t", i, h != nil)
		}
	}
	if len(shared) != 1 || shared[0] != (salt.Entry{Item: "hot", Ways: 8, Until: at.Add(time.Minute), By: "test"}) {
		t.Fatalf("shared %v", shared)
	}
	// Still hot 10 s later: no new entry; 31 s later: renewed.
	for _, d := range []time.Duration{10 * time.Second, 31 * time.Second} {
		for range 100 {
			s.Key("hot", at.Add(d))
		}
	}
	if len(shared) != 2 || !shared[1].Until.Equal(at.Add(91*time.Second)) {
		t.Fatalf("after renewing: shared %v", shared)
	}
	if _, h := s.Key("hot", at.Add(91*time.Second)); h != nil {
		t.Fatal("still salted after its hold")
	}
	for _, bad := range []salt.Config{{Threshold: -1, Ways: 4, Hold: time.Second}, {Ways: 1, Hold: time.Second}, {Ways: 4}} {
		if _, err := salt.NewSalter(bad, salt.NewSet(), nil); !errors.Is(err, setting.ErrConfig) {
			t.Errorf("NewSalter(%+v): %v, want a setting error", bad, err)
		}
	}
}
