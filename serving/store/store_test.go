package store

import (
	"errors"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)

func list(window string, start time.Time, src Source, status Status, exact bool) List {
	l := List{Window: window, Start: start, AsOf: t0, Version: 1, Source: src, Status: status, Exact: exact,
		Items: []Item{{Rank: 1, ItemID: "V1", Views: 3, Exact: exact}}}
	if !start.IsZero() {
		l.End = Next(window, start)
	}
	return l
}

func TestValidateStatus(t *testing.T) {
	hour := t0.Add(-time.Hour)
	for _, c := range []struct {
		name string
		l    List
		ok   bool
	}{
		{"speed live list", list("hour", time.Time{}, SourceSpeed, StatusLive, false), true},
		{"speed open hour", list("hour", t0, SourceSpeed, StatusLive, false), true},
		{"speed closed hour", list("hour", hour, SourceSpeed, StatusProvisional, false), true},
		{"batch hour", list("hour", hour, SourceBatch, StatusExact, true), true},
		{"batch all-time", list("all", time.Time{}, SourceBatch, StatusExact, true), true},
		// A live all-time count proven exact may say so while it stays live.
		{"speed all-time proven exact", list("all", time.Time{}, SourceSpeed, StatusLive, true), true},
		{"speed live hour says exact", list("hour", time.Time{}, SourceSpeed, StatusLive, true), false},
		{"speed provisional says exact", list("hour", hour, SourceSpeed, StatusProvisional, true), false},
		{"speed status exact", list("hour", hour, SourceSpeed, StatusExact, true), false},
		{"batch status provisional", list("hour", hour, SourceBatch, StatusProvisional, false), false},
		{"batch exact false", list("hour", hour, SourceBatch, StatusExact, false), false},
		{"live provisional", list("day", time.Time{}, SourceSpeed, StatusProvisional, false), false},
		{"no status", list("hour", hour, SourceSpeed, "", false), false},
	} {
		err := c.l.Validate()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("%s: Validate = %v, want ok=%v", c.name, err, c.ok)
		}
	}
	l := list("hour", time.Time{}, SourceSpeed, StatusLive, false)
	l.DroppedLate = 3
	if err := l.Validate(); !errors.Is(err, ErrInvalid) {
		t.Errorf("dropped_late on a live list: %v, want ErrInvalid", err)
	}
	l = list("hour", hour, SourceSpeed, StatusProvisional, false)
	l.DroppedLate = 3
	if err := l.Validate(); err != nil {
		t.Errorf("dropped_late on a provisional list: %v", err)
	}
}

func TestAdmitLabels(t *testing.T) {
	hour := t0.Add(-time.Hour)
	prov := list("hour", hour, SourceSpeed, StatusProvisional, false)
	prov.Version, prov.DroppedLate = 100, 4
	// The same final list with more late drops (same version) replaces it.
	more := prov
	more.DroppedLate = 9
	if err := Admit(&prov, more); err != nil {
		t.Fatalf("same version, more drops: %v", err)
	}
	exact := list("hour", hour, SourceBatch, StatusExact, true)
	if err := Admit(&prov, exact); err != nil {
		t.Fatalf("exact over provisional: %v", err)
	}
	if err := Admit(&exact, more); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("provisional over exact: %v, want ErrSuperseded", err)
	}
	// Live all-time: the newest as-of wins, whoever wrote it.
	batchAll := list("all", time.Time{}, SourceBatch, StatusExact, true)
	batchAll.Version = 50
	speedAll := list("all", time.Time{}, SourceSpeed, StatusLive, false)
	speedAll.Version = 60
	if err := Admit(&speedAll, batchAll); !errors.Is(err, ErrStaleVersion) {
		t.Fatalf("older batch all-time over newer speed: %v, want ErrStaleVersion", err)
	}
	bad := more
	bad.Status = ""
	if err := Admit(&prov, bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("no status: %v, want ErrInvalid", err)
	}
}

func TestNormalizeLegacy(t *testing.T) {
	hour := t0.Add(-time.Hour)
	for _, c := range []struct {
		name string
		l    List
		want Status
	}{
		{"old batch list", list("hour", hour, SourceBatch, "", true), StatusExact},
		{"old speed closed hour said exact", list("hour", hour, SourceSpeed, "", true), StatusProvisional},
		{"old speed open hour", list("hour", t0, SourceSpeed, "", true), StatusLive},
		{"old speed live list", list("day", time.Time{}, SourceSpeed, "", true), StatusLive},
	} {
		got := c.l.Normalize()
		if got.Status != c.want || got.Exact != (c.want == StatusExact) || got.Items[0].Exact != got.Exact {
			t.Errorf("%s: status %q exact %v item exact %v, want %q", c.name, got.Status, got.Exact, got.Items[0].Exact, c.want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: normalized list invalid: %v", c.name, err)
		}
		if c.l.Source == SourceSpeed && !c.l.Items[0].Exact {
			t.Errorf("%s: Normalize changed the caller's items", c.name)
		}
	}
	l := list("hour", hour, SourceSpeed, StatusProvisional, false)
	if got := l.Normalize(); got.Status != StatusProvisional {
		t.Errorf("a list with a status changed: %q", got.Status)
	}
}
