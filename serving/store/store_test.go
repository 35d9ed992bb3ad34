package store

import (
	"errors"
	"testing"
	"time"
	"trending/model"
)

var t0 = time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)

func list(window string, start time.Time, src model.Source, status model.Status, exact bool) model.List {
	l := model.List{Window: window, Start: start, AsOf: t0, Version: 1, Source: src, Status: status, Exact: exact,
		Items: []model.Item{{Rank: 1, ItemID: "V1", Views: 3, Exact: exact}}}
	if !start.IsZero() {
		l.End = model.Period(window).Next(start)
	}
	return l
}

func TestValidateStatus(t *testing.T) {
	hour := t0.Add(-time.Hour)
	for _, c := range []struct {
		name string
		l    model.List
		ok   bool
	}{
		{"speed live list", list("hour", time.Time{}, model.SourceSpeed, model.StatusLive, false), true},
		{"speed open hour", list("hour", t0, model.SourceSpeed, model.StatusLive, false), true},
		{"speed closed hour", list("hour", hour, model.SourceSpeed, model.StatusProvisional, false), true},
		{"batch hour", list("hour", hour, model.SourceBatch, model.StatusExact, true), true},
		{"batch all-time", list("all", time.Time{}, model.SourceBatch, model.StatusExact, true), true},
		// A live all-time count proven exact may say so while it stays live.
		{"speed all-time proven exact", list("all", time.Time{}, model.SourceSpeed, model.StatusLive, true), true},
		{"speed live hour says exact", list("hour", time.Time{}, model.SourceSpeed, model.StatusLive, true), false},
		{"speed provisional says exact", list("hour", hour, model.SourceSpeed, model.StatusProvisional, true), false},
		{"speed status exact", list("hour", hour, model.SourceSpeed, model.StatusExact, true), false},
		{"batch status provisional", list("hour", hour, model.SourceBatch, model.StatusProvisional, false), false},
		{"batch exact false", list("hour", hour, model.SourceBatch, model.StatusExact, false), false},
		{"live provisional", list("day", time.Time{}, model.SourceSpeed, model.StatusProvisional, false), false},
		{"no status", list("hour", hour, model.SourceSpeed, "", false), false},
	} {
		err := c.l.Validate()
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, ErrInvalid)) {
			t.Errorf("%s: Validate = %v, want ok=%v", c.name, err, c.ok)
		}
	}
	l := list("hour", time.Time{}, model.SourceSpeed, model.StatusLive, false)
	l.DroppedLate = 3
	if err := l.Validate(); !errors.Is(err, ErrInvalid) {
		t.Errorf("dropped_late on a live list: %v, want ErrInvalid", err)
	}
	l = list("hour", hour, model.SourceSpeed, model.StatusProvisional, false)
	l.DroppedLate = 3
	if err := l.Validate(); err != nil {
		t.Errorf("dropped_late on a provisional list: %v", err)
	}
}

func TestAdmitLabels(t *testing.T) {
	hour := t0.Add(-time.Hour)
	prov := list("hour", hour, model.SourceSpeed, model.StatusProvisional, false)
	prov.Version, prov.DroppedLate = 100, 4
	// The same final list with more late drops (same version) replaces it.
	more := prov
	more.DroppedLate = 9
	if err := Admit(&prov, more); err != nil {
		t.Fatalf("same version, more drops: %v", err)
	}
	exact := list("hour", hour, model.SourceBatch, model.StatusExact, true)
	if err := Admit(&prov, exact); err != nil {
		t.Fatalf("exact over provisional: %v", err)
	}
	if err := Admit(&exact, more); !errors.Is(err, ErrSuperseded) {
		t.Fatalf("provisional over exact: %v, want ErrSuperseded", err)
	}
	// Live all-time: the newest as-of wins, whoever wrote it.
	batchAll := list("all", time.Time{}, model.SourceBatch, model.StatusExact, true)
	batchAll.Version = 50
	speedAll := list("all", time.Time{}, model.SourceSpeed, model.StatusLive, false)
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
		l    model.List
		want model.Status
	}{
		{"old batch list", list("hour", hour, model.SourceBatch, "", true), model.StatusExact},
		{"old speed closed hour said exact", list("hour", hour, model.SourceSpeed, "", true), model.StatusProvisional},
		{"old speed open hour", list("hour", t0, model.SourceSpeed, "", true), model.StatusLive},
		{"old speed live list", list("day", time.Time{}, model.SourceSpeed, "", true), model.StatusLive},
	} {
		got := c.l.Normalize()
		if got.Status != c.want || got.Exact != (c.want == model.StatusExact) || got.Items[0].Exact != got.Exact {
			t.Errorf("%s: status %q exact %v item exact %v, want %q", c.name, got.Status, got.Exact, got.Items[0].Exact, c.want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: normalized list invalid: %v", c.name, err)
		}
		if c.l.Source == model.SourceSpeed && !c.l.Items[0].Exact {
			t.Errorf("%s: Normalize changed the caller's items", c.name)
		}
	}
	l := list("hour", hour, model.SourceSpeed, model.StatusProvisional, false)
	if got := l.Normalize(); got.Status != model.StatusProvisional {
		t.Errorf("a list with a status changed: %q", got.Status)
	}
}

// TestValidateDecayed: a decayed list is the speed layer's live list, ranked by score, each
// item's views its score rounded; a score on any other list, or a batch or calendar decayed
// list, is invalid.
func TestValidateDecayed(t *testing.T) {
	decayed := func() model.List {
		l := list("now", time.Time{}, model.SourceSpeed, model.StatusLive, false)
		l.HalfLifeSeconds = 3600
		l.Items = []model.Item{{Rank: 1, ItemID: "V1", Views: 3, DecayedScore: 2.5}, {Rank: 2, ItemID: "V2", Views: 0, DecayedScore: 0.4}}
		return l
	}
	if err := decayed().Validate(); err != nil {
		t.Fatalf("decayed list: %v", err)
	}
	for name, change := range map[string]func(*model.List){
		"views not the rounded score": func(l *model.List) { l.Items[0].Views = 2 },
		"not sorted by score":         func(l *model.List) { l.Items[1].DecayedScore, l.Items[1].Views = 2.6, 3 },
		"zero score":                  func(l *model.List) { l.Items[1].DecayedScore = 0 },
		"batch":                       func(l *model.List) { l.Source, l.Status, l.Exact = model.SourceBatch, model.StatusExact, true },
		"calendar":                    func(l *model.List) { l.Window, l.Start, l.End = "hour", t0, t0.Add(time.Hour) },
		"negative half-life":          func(l *model.List) { l.HalfLifeSeconds = -1 },
		"score on a list of views":    func(l *model.List) { l.HalfLifeSeconds = 0 },
	} {
		l := decayed()
		change(&l)
		if err := l.Validate(); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Validate = %v, want ErrInvalid", name, err)
		}
	}
}
