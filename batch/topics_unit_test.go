package batch

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"trending/archive"
	"trending/internal/objstore"
	"trending/model"
	"trending/model/topicrules"
)

// TestTopicsList: the list rules one case each, against hand-computed numbers.
func TestTopicsList(t *testing.T) {
	cfg := DefaultTopicsConfig()
	cfg.Regions = []string{"eu"}
	cfg.Scores = map[string]topicrules.Score{"eu": topicrules.Surge}
	cfg.Held = func(topic string) bool { return topic == "held" }
	cur := []TopicCount{
		{Region: "eu", Topic: "marathon", Tenths: 40000, NewTenths: 400}, // 4,000 now
		{Region: "eu", Topic: "bots", Tenths: 5000, NewTenths: 4000},     // 500, 80% new: cut
		{Region: "eu", Topic: "junk", Tenths: 2990},                      // 299: below the floor
		{Region: "eu", Topic: "held", Tenths: 90000},                     // held for review
		{Region: "us", Topic: "sport", Tenths: 600000},                   // world only here
		{Region: "eu", Topic: "flat", Tenths: 3000},                      // 300 against 300: 1, not listed
	}
	day := []TopicCount{{Region: "eu", Topic: "marathon", Tenths: 2000}, {Region: "eu", Topic: "flat", Tenths: 3000}}
	// Two days with data (200 each) and one without: expected 200, score 4,050/250 = 16.2.
	eu, exact := TopicsList(cfg, "eu", cur, [][]TopicCount{day, nil, day})
	want := []model.Item{
		{Rank: 1, ItemID: "marathon", Views: 4000, Exact: true, Topic: &model.Topic{Score: 16.2, Expected: 200, NewShare: 0.01}},
		{Rank: 2, ItemID: "bots", Views: 500, Exact: true, Topic: &model.Topic{Score: (500.0 + 50) / 50 * 0.1, NewShare: 0.8, Review: true}},
	}
	if len(eu) != len(want) {
		t.Fatalf("eu: got %+v, want %+v", eu, want)
	}
	for i := range want {
		g, w := eu[i], want[i]
		if g.ItemID != w.ItemID || g.Views != w.Views || g.Review != w.Review || !nearF(g.Score, w.Score) || !nearF(g.Expected, w.Expected) || !nearF(g.NewShare, w.NewShare) {
			t.Fatalf("eu rank %d: got %+v, want %+v", i+1, g, w)
		}
	}
	if exact["junk"] != 299 || exact["sport"] != 0 {
		t.Fatalf("exact counts %v: want junk 299 and no us topic", exact)
	}
	// Volume: bots 500 cut to 50 falls below flat (300); held is kept off.
	world, _ := TopicsList(cfg, topicrules.World, cur, nil)
	if got := names(world); !slices.Equal(got, []string{"sport", "marathon", "flat", "bots"}) {
		t.Fatalf("world volume list %v", got)
	}
}

func nearF(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func names(its []model.Item) []string {
	var out []string
	for _, it := range its {
		out = append(out, it.ItemID)
	}
	return out
}

// memArchive serves rows from memory, in the given order.
type memArchive struct{ rows []archive.Row }

func (m memArchive) ListHour(context.Context, time.Time) ([]objstore.Object, error) { return nil, nil }
func (m memArchive) Fingerprint(context.Context, time.Time) (string, error)         { return "fp", nil }
func (m memArchive) Incomplete(context.Context, time.Time, time.Duration) (string, error) {
	return "", nil
}
func (m memArchive) Dirty(context.Context) ([]archive.Dirty, error) { return nil, nil }
func (m memArchive) ClearDirty(context.Context, []string) error     { return nil }
func (m memArchive) ReadHour(_ context.Context, _ time.Time, fn func(archive.Row) error) error {
	for _, r := range m.rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// TestCountTopicHour: the per-row rules, one case each.
func TestCountTopicHour(t *testing.T) {
	h := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)
	at := func(min int) int64 { return h.Add(time.Duration(min) * time.Minute).UnixMilli() }
	age := func(d int32) *int32 { return &d }
	rows := []archive.Row{
		// u1 twice in slot 0 (the later row arrives first: the earlier one decides region
		// and age), once in slot 1.
		{ItemID: "a", Count: 1, TS: at(10), Partition: 0, Offset: 2, UserID: "u1", Region: "us", AccountAgeDays: age(100)},
		{ItemID: "a", Count: 1, TS: at(5), Partition: 0, Offset: 1, UserID: "u1", Region: "eu", AccountAgeDays: age(2)},
		{ItemID: "a", Count: 1, TS: at(15), Partition: 0, Offset: 3, UserID: "u1", Region: "eu"},
		// The same (partition, offset) twice: once.
		{ItemID: "a", Count: 1, TS: at(15), Partition: 0, Offset: 3, UserID: "u1", Region: "eu"},
		// Anonymous, count 4, no age: 40 tenths; a user row with count 7 counts once.
		{ItemID: "b", Count: 4, TS: at(20), Partition: 1, Offset: 1, Region: "eu"},
		{ItemID: "b", Count: 7, TS: at(21), Partition: 1, Offset: 2, UserID: "u2", Region: "eu", AccountAgeDays: age(29)},
		// Blocked.
		{ItemID: "#Spam", Count: 1, TS: at(22), Partition: 1, Offset: 3, Region: "eu"},
	}
	rules := TopicRules{Blocked: topicrules.NewBlocklist("spam").Blocked, NewAccountAge: 30 * 24 * time.Hour, DedupeSlot: 15 * time.Minute}
	got, n, err := CountTopicHour(context.Background(), memArchive{rows}, h, rules)
	if err != nil {
		t.Fatal(err)
	}
	want := []TopicCount{
		{Region: "eu", Topic: "a", Tenths: 3 + 10, NewTenths: 3},
		{Region: "eu", Topic: "b", Tenths: 40 + 3, NewTenths: 3},
	}
	if !slices.Equal(got, want) || n != 4 {
		t.Fatalf("got %+v (%d rows), want %+v (4 rows)", got, n, want)
	}
}

func TestTopicCountsRoundTrip(t *testing.T) {
	cs := []TopicCount{{Region: "", Topic: "x", Tenths: 10}, {Region: "eu", Topic: "#y", Tenths: 1 << 40, NewTenths: 3}}
	got, err := decodeTopicCounts(encodeTopicCounts(cs))
	if err != nil || !slices.Equal(got, cs) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	b := encodeTopicCounts(cs)
	for i := range len(b) - 1 {
		if _, err := decodeTopicCounts(b[:i]); err == nil {
			t.Fatalf("truncated at %d: decoded", i)
		}
	}
}

func TestTopicsConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*TopicsConfig)
		ok   bool
	}{
		{"defaults", func(*TopicsConfig) {}, true},
		{"regions", func(c *TopicsConfig) { c.Regions = []string{"eu", "us"} }, true},
		{"world as a region", func(c *TopicsConfig) { c.Regions = []string{"world"} }, false},
		{"slash in a region", func(c *TopicsConfig) { c.Regions = []string{"e/u"} }, false},
		{"score of an unknown list", func(c *TopicsConfig) { c.Scores = map[string]topicrules.Score{"eu": topicrules.Surge} }, false},
		{"slot not dividing an hour", func(c *TopicsConfig) { c.DedupeSlot = 7 * time.Minute }, false},
		{"slot under a minute", func(c *TopicsConfig) { c.DedupeSlot = time.Second }, false},
		{"baseline days", func(c *TopicsConfig) { c.BaselineDays = 29 }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultTopicsConfig()
			tc.mod(&c)
			if err := c.Validate(); (err == nil) != tc.ok {
				t.Fatalf("Validate: %v, want ok %v", err, tc.ok)
			}
		})
	}
}

// FuzzDecodeTopicCounts: a corrupt rollup value is an error, never a panic, and what
// decodes re-encodes to the same bytes.
func FuzzDecodeTopicCounts(f *testing.F) {
	f.Add(encodeTopicCounts([]TopicCount{{Region: "eu", Topic: "#a", Tenths: 13, NewTenths: 3}}))
	f.Add([]byte{0})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		cs, err := decodeTopicCounts(b)
		if err != nil {
			return
		}
		if got := encodeTopicCounts(cs); string(got) != string(b) && len(cs) > 0 {
			// Non-minimal varints decode too; re-decoding the canonical form must agree.
			again, err := decodeTopicCounts(got)
			if err != nil || !slices.Equal(again, cs) {
				t.Fatalf("re-decode: %v, %v", again, err)
			}
		}
	})
}

// BenchmarkCountTopicHour: the Go-native count of one hour, 100,000 mentions from 20,000
// users (70% with a user, a third of them new accounts) over 2,000 topics.
func BenchmarkCountTopicHour(b *testing.B) {
	h := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)
	rows := make([]archive.Row, 100_000)
	for i := range rows {
		r := archive.Row{ItemID: fmt.Sprintf("t%d", (i*7919)%2000), Count: 1, TS: h.Add(time.Duration(i) * 36 * time.Millisecond).UnixMilli(),
			Partition: int32(i % 8), Offset: int64(i), Region: []string{"eu", "us", "jp", ""}[i%4]}
		if i%10 < 7 {
			r.UserID = fmt.Sprintf("u%d", (i*31)%20000)
			age := int32(i % 90)
			r.AccountAgeDays = &age
		}
		rows[i] = r
	}
	rules := TopicRules{Blocked: topicrules.NewBlocklist("spam").Blocked, NewAccountAge: 30 * 24 * time.Hour, DedupeSlot: 15 * time.Minute}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := CountTopicHour(context.Background(), memArchive{rows}, h, rules); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(rows))*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
}

// TestNightlyHours: the day's 24 hours and every hour of the lookback, oldest first; the
// day defaults to yesterday, and a time within the day means the whole day.
func TestNightlyHours(t *testing.T) {
	now := time.Date(2026, 11, 15, 0, 30, 0, 0, time.UTC)
	day := time.Date(2026, 11, 14, 0, 0, 0, 0, time.UTC)
	for name, c := range map[string]struct {
		date     time.Time
		lookback int
		first    time.Time
		n        int
	}{
		"yesterday":     {time.Time{}, 0, day, 24},
		"within a day":  {day.Add(13*time.Hour + 5*time.Minute), 0, day, 24},
		"lookback":      {day, 2, day.AddDate(0, 0, -2), 72},
		"month before":  {time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), 1, time.Date(2026, 10, 31, 0, 0, 0, 0, time.UTC), 48},
		"default, back": {time.Time{}, 35, day.AddDate(0, 0, -35), 36 * 24},
	} {
		hours, err := NightlyHours(c.date, now, c.lookback)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(hours) != c.n {
			t.Fatalf("%s: %d hours, want %d", name, len(hours), c.n)
		}
		for i, h := range hours {
			if want := c.first.Add(time.Duration(i) * time.Hour); h.Level != Hour || !h.Start.Equal(want) {
				t.Fatalf("%s: hour %d is %v, want the hour of %v", name, i, h, want)
			}
		}
	}
}
