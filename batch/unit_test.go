package batch

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
	"trending/model"
	"trending/model/topk"
	"trending/model/windowset"
)

func TestReconcile(t *testing.T) {
	list := func(items ...model.Item) model.List {
		for i := range items {
			items[i].Rank = i + 1
		}
		return model.List{Version: 42, Items: items}
	}
	for _, c := range []struct {
		name    string
		speed   model.List
		exact   []topk.Entry
		exactOf map[string]uint64
		want    model.Reconciliation
	}{
		{"both empty", list(), nil, nil, model.Reconciliation{SpeedVersion: 42, RecallAtK: 1}},
		{"perfect", list(model.Item{ItemID: "a", Views: 5}, model.Item{ItemID: "b", Views: 3}),
			[]topk.Entry{{Item: "a", Count: 5}, {Item: "b", Count: 3}}, map[string]uint64{"a": 5, "b": 3},
			model.Reconciliation{SpeedVersion: 42, RecallAtK: 1}},
		{"one missed, overcount", list(model.Item{ItemID: "a", Views: 9}, model.Item{ItemID: "c", Views: 3}),
			[]topk.Entry{{Item: "a", Count: 6}, {Item: "b", Count: 4}}, map[string]uint64{"a": 6, "c": 2},
			model.Reconciliation{SpeedVersion: 42, RecallAtK: 0.5, MaxAbsError: 3, MeanAbsError: 2, MaxRelError: 0.5}},
		{"item with no exact views", list(model.Item{ItemID: "ghost", Views: 4}),
			[]topk.Entry{{Item: "a", Count: 6}}, map[string]uint64{},
			model.Reconciliation{SpeedVersion: 42, RecallAtK: 0, MaxAbsError: 4, MeanAbsError: 4, MaxRelError: 1}},
		{"speed list shorter: K is the shorter", list(model.Item{ItemID: "a", Views: 6}),
			[]topk.Entry{{Item: "a", Count: 6}, {Item: "b", Count: 5}, {Item: "c", Count: 1}}, map[string]uint64{"a": 6},
			model.Reconciliation{SpeedVersion: 42, RecallAtK: 1}},
		{"sketch list: its bound is kept", withBound(list(model.Item{ItemID: "a", Views: 10}), 4),
			[]topk.Entry{{Item: "a", Count: 7}}, map[string]uint64{"a": 7},
			model.Reconciliation{SpeedVersion: 42, RecallAtK: 1, MaxAbsError: 3, MeanAbsError: 3, MaxRelError: 3.0 / 7,
				SpeedErrorBound: &model.Bound{MaxOvercount: 4, Probability: 0.99}}},
		{"frequent list: the widest of its bounds", frequentList(list(model.Item{ItemID: "a", Views: 10, ViewsUpper: 14}, model.Item{ItemID: "b", Views: 6, ViewsUpper: 12})),
			[]topk.Entry{{Item: "a", Count: 12}, {Item: "b", Count: 7}}, map[string]uint64{"a": 12, "b": 7},
			model.Reconciliation{SpeedVersion: 42, RecallAtK: 1, MaxAbsError: 2, MeanAbsError: 1.5, MaxRelError: 2.0 / 12,
				SpeedErrorBound: &model.Bound{MaxOvercount: 6, Probability: 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Reconcile(c.speed, c.exact, c.exactOf); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func frequentList(l model.List) model.List {
	l.Frequent = true
	return l
}

func withBound(l model.List, maxOvercount float64) model.List {
	l.ErrorBound = &model.Bound{MaxOvercount: maxOvercount, Probability: 0.99}
	return l
}

func TestSpanAndChildren(t *testing.T) {
	d := time.Date(2026, 2, 27, 5, 30, 0, 0, time.UTC)
	ws, err := Span(Day, d, d.AddDate(0, 0, 3))
	if err != nil {
		t.Fatal(err)
	}
	// from aligns down to Feb 27; Mar 2 00:00 is before to (Mar 2 05:30), so it is in.
	if len(ws) != 4 || !ws[0].Start.Equal(time.Date(2026, 2, 27, 0, 0, 0, 0, time.UTC)) || !ws[2].Start.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("span %v", ws)
	}
	if _, err := Span(Hour, d, d); err == nil {
		t.Fatal("empty range accepted")
	}
	feb := Window{Month, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)}
	if n := len(feb.Children(time.Time{})); n != 28 {
		t.Fatalf("February has %d days", n)
	}
	if n := len(feb.Hours(time.Date(2026, 2, 2, 6, 0, 0, 0, time.UTC))); n != 30 {
		t.Fatalf("hours through Feb 2 06:00: %d, want 30", n)
	}
	if got, err := ParseLevels("month, hour,hour", windowset.Default()); err != nil || !slices.Equal(got, []string{Hour, Month}) {
		t.Fatalf("ParseLevels = %v, %v", got, err)
	}
	if _, err := ParseLevels("week", windowset.Default()); err == nil || !strings.Contains(err.Error(), "use hour, day, month, all") {
		t.Fatalf("week accepted without a calendar week configured: %v", err)
	}
	seed, _ := windowset.Preset("seed-004")
	if got, err := ParseLevels("week", seed); err != nil || !slices.Equal(got, []string{Week}) {
		t.Fatalf("ParseLevels(week) with seed-004 = %v, %v", got, err)
	}
	if _, err := ParseLevels("hour", seed); err == nil || !strings.Contains(err.Error(), "use day, week (") {
		t.Fatalf("hour accepted with seed-004: %v", err)
	}
	wk := Window{Week, time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)}
	if ch := wk.Children(time.Time{}); len(ch) != 7 || ch[0].Level != Day || !ch[6].Start.Equal(time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)) || !wk.End().Equal(time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("week children %v end %s", ch, wk.End())
	}
}

// TestCombineSensitive: a changed child fingerprint or a missing child changes the parent.
func TestCombineSensitive(t *testing.T) {
	day := Window{Day, time.Date(2026, 11, 14, 0, 0, 0, 0, time.UTC)}
	hs := day.Children(time.Time{})
	fps := make([]string, len(hs))
	for i := range fps {
		fps[i] = "x"
	}
	a := Combine(hs, fps)
	fps[7] = "y"
	if Combine(hs, fps) == a || Combine(hs[:23], fps[:23]) == a {
		t.Fatal("Combine ignores a change")
	}
}

func TestCountsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range []int{0, 1, 100} {
		c := counts{}
		for range n {
			c[string(rune('a'+rng.IntN(26)))+string(rune('a'+rng.IntN(26)))] = rng.Uint64()
		}
		got := counts{}
		if err := addInto(got, encodeCounts(c)); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(c) {
			t.Fatalf("round trip: %d items, want %d", len(got), len(c))
		}
		for k, v := range c {
			if got[k] != v {
				t.Fatalf("%s: %d, want %d", k, got[k], v)
			}
		}
	}
}

// FuzzEachCount: a corrupt rollup value from disk is an error, never a panic.
func FuzzEachCount(f *testing.F) {
	f.Add(encodeCounts(counts{"V1": 3, "V22": 1 << 40}))
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		c := counts{}
		if err := addInto(c, b); err == nil {
			// Valid input re-encodes to a value that decodes to the same counts.
			again := counts{}
			if err := addInto(again, encodeCounts(c)); err != nil || len(again) != len(c) {
				t.Fatalf("re-encode: %v", err)
			}
		}
	})
}
