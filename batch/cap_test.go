package batch_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"trending/archive"
	"trending/batch"
	"trending/model"
	"trending/model/windowset"
)

// TestCapExact: with a per-account cap, on both engines, every hour's list (of all items and
// of each region) is the capped truth computed here: per (hour, item, account) at most N
// views, events without an account uncapped; the same archive without the cap gives the
// uncapped truth, and turning the cap on rebuilds the hours (the fingerprint names it).
func TestCapExact(t *testing.T) {
	engines(t, func(t *testing.T, open func(t *testing.T) batch.Engine) {
		const capN = 6
		f := newFixture(t)
		hours := []time.Time{day0.Add(10 * time.Hour), day0.Add(11 * time.Hour)}
		type key struct {
			hour         time.Time
			region, item string
			user         string
		}
		sums := map[key]uint64{}
		for p := range int32(2) {
			byHour := map[time.Time][]archive.Row{}
			for i := range 3000 {
				ts := hours[0].Add(time.Duration(f.rng.Int64N(int64(2 * time.Hour))))
				r := archive.Row{ItemID: fmt.Sprintf("V%d", f.rng.IntN(30)), Count: uint32(1 + f.rng.IntN(4)), TS: ts.UnixMilli(),
					Partition: p, Offset: int64(i), IngestTS: ts.UnixMilli(), Region: []string{"eu", "us", ""}[f.rng.IntN(3)]}
				if f.rng.IntN(10) > 0 {
					r.UserID = fmt.Sprintf("u%d", f.rng.IntN(40))
				}
				h := ts.Truncate(time.Hour)
				byHour[h] = append(byHour[h], r)
				sums[key{h, "", r.ItemID, r.UserID}] += uint64(r.Count)
				if r.Region != "" {
					sums[key{h, r.Region, r.ItemID, r.UserID}] += uint64(r.Count)
				}
			}
			f.write(p, 0, 2999, byHour)
			f.write(p, 0, 2999, byHour) // a retried upload: dedup first, then the cap
			f.next[p] = 3000
		}
		f.progress(day0.Add(72 * time.Hour))
		truth := func(capped bool) map[[2]string]map[string]uint64 { // (hour, region) -> item -> views
			out := map[[2]string]map[string]uint64{}
			for k, v := range sums {
				if capped && k.user != "" {
					v = min(v, capN)
				}
				hk := [2]string{k.hour.Format(time.RFC3339), k.region}
				if out[hk] == nil {
					out[hk] = map[string]uint64{}
				}
				out[hk][k.item] += v
			}
			return out
		}
		eng, st := open(t), boltStore(t)
		ctx := context.Background()
		now := time.Date(2026, 11, 16, 0, 0, 0, 0, time.UTC)
		groups, err := windowset.ParseGroupValues("region", "eu,us", 10)
		if err != nil {
			t.Fatal(err)
		}
		ws := windowset.Default()
		ws.Groups = groups
		check := func(capped bool) {
			t.Helper()
			tr := truth(capped)
			for _, h := range hours {
				for _, region := range []string{"", "eu", "us"} {
					k := model.Key{Window: "hour", Start: h, Group: region}
					l, err := st.Get(ctx, k)
					if err != nil {
						t.Fatalf("%s: %v", k, err)
					}
					want := rank(tr[[2]string{h.Format(time.RFC3339), region}])
					if !slices.Equal(l.Items, want) {
						t.Fatalf("%s capped=%v: %v, want %v", k, capped, head(l.Items), head(want))
					}
					if capped != strings.Contains(l.Fingerprint, ";cap=6") {
						t.Fatalf("%s: fingerprint %q", k, l.Fingerprint)
					}
				}
			}
		}
		win := []batch.Window{{Level: batch.Hour, Start: hours[0]}, {Level: batch.Hour, Start: hours[1]}}
		r := newRunner(t, f, eng, st, now, func(c *batch.Config) { c.Windows = ws })
		if _, err := r.Recompute(ctx, win); err != nil {
			t.Fatal(err)
		}
		check(false)
		r = newRunner(t, f, eng, st, now.Add(time.Minute), func(c *batch.Config) { c.Windows, c.CapViews = ws, capN })
		rep, err := r.Recompute(ctx, win)
		if err != nil {
			t.Fatal(err)
		}
		built := 0
		for _, o := range rep.Outcomes {
			if o.Built {
				built++
			}
		}
		if built == 0 {
			t.Fatal("turning the cap on rebuilt no hour")
		}
		check(true)
	})
}
