package api

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"trending/model"
	"trending/serving/store/storetest"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden bodies in testdata/golden")

// goldenLists are one list of each kind the API serves, with every optional field some list
// sets: what TestGoldenBodies pins the JSON and Arrow bodies of.
func goldenLists() map[string]model.List {
	t0 := storetest.T0
	hour := t0.Add(-time.Hour)
	items := func(n int, exact bool, f func(i int, it *model.Item)) []model.Item {
		out := make([]model.Item, n)
		for i := range out {
			out[i] = model.Item{Rank: i + 1, ItemID: "v" + string(rune('a'+i)), Views: uint64(1000 - 10*i), Exact: exact}
			if f != nil {
				f(i, &out[i])
			}
		}
		return out
	}
	titled := func(i int, it *model.Item) {
		switch i {
		case 0:
			it.Title, it.Thumbnail = `Ünïcode "quoted" <b>&</b> 日本語`, "/thumbs/va.jpg"
		case 1:
			it.Title = "tab\there\nnewline \u2028 \x01 \\ back"
		case 2:
			it.Title, it.Thumbnail = "plain", "https://cdn.example/vc.png?a=1&b=2"
		}
	}
	return map[string]model.List{
		// A live sliding list of items: partial, stale partitions, a sketch's error bound,
		// its window span, titles that need escaping.
		"items-live": {Window: "hour", AsOf: t0.Add(90 * time.Second), Version: 42, Source: model.SourceSpeed, Status: model.StatusLive,
			Incomplete: true, StalePartitions: []int{1, 5}, ErrorBound: &model.Bound{MaxOvercount: 12.5, Probability: 0.99},
			WindowStart: t0.Add(-58 * time.Minute), WindowEnd: t0.Add(90 * time.Second), ComputedAt: t0.Add(91*time.Second + 5*time.Millisecond),
			Items: items(4, false, titled)},
		// A region's list.
		"items-region": {Window: "day", Group: "eu", AsOf: t0, Version: 3, Source: model.SourceSpeed, Status: model.StatusLive,
			WindowStart: t0.Add(-23 * time.Hour), WindowEnd: t0, ComputedAt: t0, Items: items(2, false, nil)},
		// A calendar hour's exact list with its reconciliation.
		"items-exact": {Window: "hour", Start: hour, End: t0, AsOf: t0, Version: 9, Source: model.SourceBatch, Status: model.StatusExact,
			Exact: true, ComputedAt: t0.Add(2 * time.Hour), Fingerprint: "fp",
			Reconciliation: &model.Reconciliation{SpeedVersion: 7, RecallAtK: 0.9, MaxAbsError: 4, MeanAbsError: 1.25, MaxRelError: 0.004,
				SpeedErrorBound: &model.Bound{MaxOvercount: 3, Probability: 0.95}, SpeedDroppedLate: 3},
			Items: items(3, true, titled)},
		// A closed calendar hour's provisional list with late drops.
		"items-provisional": {Window: "hour", Start: hour, End: t0, AsOf: t0, Version: 8, Source: model.SourceSpeed, Status: model.StatusProvisional,
			DroppedLate: 3, ComputedAt: t0, Items: items(3, false, nil)},
		// An empty list.
		"items-empty": {Window: "minute", AsOf: t0, Version: 1, Source: model.SourceSpeed, Status: model.StatusLive, ComputedAt: t0, Items: []model.Item{}},
		// A decayed list: items rank by score.
		"scored": {Window: "now", AsOf: t0, Version: 5, Source: model.SourceSpeed, Status: model.StatusLive, HalfLifeSeconds: 3600,
			ErrorBound: &model.Bound{MaxOvercount: 0.5, Probability: 0.9}, ComputedAt: t0,
			Items: []model.Item{
				{Rank: 1, ItemID: "va", Views: 1235, DecayedScore: 1234.5678, Title: "a"},
				{Rank: 2, ItemID: "vb", Views: 3, DecayedScore: 2.5},
				{Rank: 3, ItemID: "vc", Views: 0, DecayedScore: 0.0000001},
				{Rank: 4, ItemID: "vd", Views: 0, DecayedScore: 1e-300}}},
		// The live all-time list on the batch's base: boundary and cutoff.
		"since": {Window: "all", AsOf: t0, Version: 11, Source: model.SourceSpeed, Status: model.StatusLive, Exact: true,
			WindowStart: time.Unix(0, 0).UTC(), WindowEnd: t0, Boundary: t0.Add(-10 * time.Hour), Cutoff: 77, ComputedAt: t0,
			Items: items(3, true, nil)},
		// A frequent list: views_upper and the guarantee, partial.
		"frequent": {Window: "hour", AsOf: t0, Version: 12, Source: model.SourceSpeed, Status: model.StatusLive, Frequent: true, Cutoff: 40,
			Incomplete: true, StalePartitions: []int{2}, WindowStart: t0.Add(-59 * time.Minute), WindowEnd: t0, ComputedAt: t0,
			Items: items(3, false, func(i int, it *model.Item) {
				it.ViewsUpper = it.Views + uint64(5*i)
			})},
		// A frequent list, complete: the guarantee without the words on partitions.
		"frequent-complete": {Window: "day", Start: t0.Add(-10 * time.Hour), End: t0.Add(14 * time.Hour), AsOf: t0, Version: 13,
			Source: model.SourceSpeed, Status: model.StatusLive, Frequent: true, Cutoff: 0, ComputedAt: t0,
			Items: items(2, false, func(i int, it *model.Item) { it.ViewsUpper = it.Views })},
		// A live topics list with its baseline.
		"topics": {Window: model.TopicsList, Group: "eu", Score: "surge", AsOf: t0, Version: 6, Source: model.SourceSpeed, Status: model.StatusLive,
			ErrorBound: &model.Bound{MaxOvercount: 2, Probability: 0.99}, Baseline: &model.Baseline{Days: 5, Wanted: 7, Unavailable: 1, MaxOvercount: 1.5},
			ComputedAt: t0, Items: []model.Item{
				{Rank: 1, ItemID: "#go", Views: 120, Topic: &model.Topic{Score: 3.25, Expected: 10.5, NewShare: 0.1}},
				{Rank: 2, ItemID: "#new", Views: 40, Topic: &model.Topic{Score: 2, NoHistory: true, Review: true, NewShare: 0.75}},
				{Rank: 3, ItemID: "#zero", Views: 0, Topic: &model.Topic{}}}},
		// The batch's exact topics list of a closed hour.
		"topics-exact": {Window: model.TopicsList, Group: "world", Score: "volume", Start: hour, End: t0, AsOf: t0, Version: 2,
			Source: model.SourceBatch, Status: model.StatusExact, Exact: true, ComputedAt: t0,
			Items: []model.Item{{Rank: 1, ItemID: "#go", Views: 12, Exact: true, Topic: &model.Topic{Score: 12}}}},
	}
}

// TestGoldenBodies pins the JSON and Arrow bodies of one list of each kind, byte for byte, at
// two limits (every item, and fewer): the field tables (fields.go) must render what the
// hand-written encoders did. go test -run TestGoldenBodies -update rewrites testdata/golden.
func TestGoldenBodies(t *testing.T) {
	now := storetest.T0.Add(3 * time.Minute)
	for name, l := range goldenLists() {
		t.Run(name, func(t *testing.T) {
			if err := l.Validate(); err != nil {
				t.Fatal(err)
			}
			// A list as its writers now write it (with its kind) and as stored before the kind
			// existed (KindOf infers it) render alike.
			withKind := l
			withKind.Kind = l.KindOf()
			for _, e := range []*entry{newEntry(l, 1000), newEntry(withKind, 1000)} {
				for _, n := range []int{len(l.Items), min(1, len(l.Items))} {
					check := func(ext string, got []byte) {
						t.Helper()
						path := filepath.Join("testdata", "golden", name+"-"+string(rune('0'+n))+ext)
						if *updateGolden {
							if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
								t.Fatal(err)
							}
							if err := os.WriteFile(path, got, 0o644); err != nil {
								t.Fatal(err)
							}
							return
						}
						want, err := os.ReadFile(path)
						if err != nil {
							t.Fatalf("%v (go test -run TestGoldenBodies -update writes it)", err)
						}
						if !bytes.Equal(got, want) {
							t.Errorf("%s differs from the golden body:\n got %q\nwant %q", path, got, want)
						}
					}
					check(".json", e.json(n, now).raw)
					check(".arrow", e.arrowBody(n))
				}
			}
		})
	}
}
