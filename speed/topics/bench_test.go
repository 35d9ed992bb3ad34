package topics

import (
	"trending/model/topicrules"

	"fmt"
	"testing"
	"time"
)

// BenchmarkAdd is the per-mention cost at the default shape (5 x 65,536, two keys per
// mention, dedupe on), over a Zipf-ish mix of 10,000 topics in 3 regions.
func BenchmarkAdd(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Regions = []string{"us", "jp", "de"}
	s, err := New(cfg, topicrules.NewBlocklist("spam"))
	if err != nil {
		b.Fatal(err)
	}
	const n = 1 << 14
	ms := make([]Mention, n)
	for i := range ms {
		ms[i] = Mention{Topic: fmt.Sprintf("topic%d", (i*i)%10_000), Region: cfg.Regions[i%3], UserID: fmt.Sprintf("u%d", i)}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m := ms[i%n]
		m.TS = t0.Add(time.Duration(i) * 3 * time.Millisecond) // about 20,000 a minute
		s.Add(m)
	}
}

// BenchmarkRefresh is the once-a-minute cost: score every candidate of 4 lists (200 each)
// against 7 days of hourly baselines, apply hysteresis and holds.
func BenchmarkRefresh(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Regions = []string{"us", "jp", "de"}
	cfg.Scores = map[string]topicrules.Score{"us": topicrules.Surge, "jp": topicrules.Decayed}
	s, _ := New(cfg, nil)
	for d := 7; d >= 0; d-- {
		for i := range 5000 {
			s.Add(Mention{Topic: fmt.Sprintf("topic%d", i%400), Region: cfg.Regions[i%3], TS: t0.Add(-time.Duration(d) * 24 * time.Hour)})
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		s.Refresh(t0)
	}
}

func BenchmarkDedupeFirst(b *testing.B) {
	d, _ := NewDedupe(DefaultDedupeConfig())
	b.ReportAllocs()
	for i := range b.N {
		d.First(uint64(i)*0x9E3779B97F4A7C15, int64(i>>14))
	}
}
