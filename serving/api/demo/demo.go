// Package demo builds a plausible set of served lists (live windows and recent calendar
// windows, exact and approximate, with some missing) for the dashboard's browser test, the
// serving benchmark and trying the API without a pipeline. It never runs in production paths.
package demo

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"trending/model"
	"trending/serving/store"
)

var titles = []string{
	"Cat learns to open the fridge", "Ten-minute pasta, no pot", "Live: city marathon finish",
	"Rebuilding a 1972 synthesizer", "Why bridges sway", "Lo-fi beats to debug to",
	"Street food tour of Osaka", "The 40-year-old chess trap", "Goal of the season, every angle",
	"How a Kafka partition works", "Tiny house, big storm", "Speedrun world record explained",
	"Sourdough at 2 a.m.", "Drone over the fjords", "Interview: the sketch that saved 250 GB",
	"Unboxing the slowest laptop", "Orchestra plays the dial-up tone", "Northern lights timelapse",
	"Grandma reviews energy drinks", "One hour of rain on a tin roof",
}

// Lists returns the demo lists as of now: the four live lists, the last 24 hours (older
// closed hours exact with a reconciliation, the two recent closed ones provisional with late
// drops, the open one live, two missing), the last 8 days and the last 4 months (closed ones
// exact with a reconciliation; the months' against the sketch bound their speed lists stated).
func Lists(now time.Time) []model.List {
	now = now.UTC().Truncate(time.Minute)
	var out []model.List
	live := []struct {
		window string
		top    float64
		sketch bool
	}{{"hour", 48210, false}, {"day", 1.1e6, false}, {"month", 2.9e7, true}, {"all", 4.1e8, true}}
	for i, w := range live {
		l := list(w.window, time.Time{}, time.Time{}, now, model.SourceSpeed, w.sketch, 100, w.top, i)
		if w.window == "day" {
			l.Incomplete, l.StalePartitions = true, []int{7}
		}
		out = append(out, l)
	}
	open := model.Hour.Align(now)
	for h := 0; h < 24; h++ {
		start := open.Add(-time.Duration(h) * time.Hour)
		if h == 5 || h == 17 {
			continue // nobody computed these: a gap the windows view shows as missing
		}
		end := start.Add(time.Hour)
		asOf := earlier(now, end)
		exact := h >= 3
		src := model.SourceSpeed
		if exact {
			src = model.SourceBatch
		}
		l := list("hour", start, end, asOf, src, false, 100, 40000+float64(h%5)*3000, h)
		if exact {
			l.Reconciliation = &model.Reconciliation{SpeedVersion: asOf.UnixMilli(), RecallAtK: 0.98 - float64(h%3)*0.01,
				MaxAbsError: uint64(40 + h), MeanAbsError: 6.5, MaxRelError: 0.004}
			l.Fingerprint = fmt.Sprintf("sha256:%016x", h)
		}
		out = append(out, l)
	}
	today := model.Day.Align(now)
	for d := 0; d < 8; d++ {
		start := today.AddDate(0, 0, -d)
		end := start.AddDate(0, 0, 1)
		exact := d >= 1
		src := model.SourceSpeed
		if exact {
			src = model.SourceBatch
		}
		l := list("day", start, end, earlier(now, end), src, false, 100, 1e6+float64(d)*4e4, d+3)
		if exact {
			// The day's speed list counted exactly (exact mode): errors only from late data.
			l.Reconciliation = &model.Reconciliation{SpeedVersion: earlier(now, end).UnixMilli(), RecallAtK: 0.99,
				MaxAbsError: uint64(120 + 10*d), MeanAbsError: 14.2, MaxRelError: 0.0011}
		}
		out = append(out, l)
	}
	month := model.Month.Align(now)
	for m := 0; m < 4; m++ {
		start := month.AddDate(0, -m, 0)
		end := start.AddDate(0, 1, 0)
		exact := m >= 1
		src := model.SourceSpeed
		if exact {
			src = model.SourceBatch
		}
		top := 3e7 - float64(m)*1e6
		l := list("month", start, end, earlier(now, end), src, true, 100, top, m+7)
		if exact {
			// The month's speed list was a sketch: its error is read against the bound it stated.
			l.Reconciliation = &model.Reconciliation{SpeedVersion: earlier(now, end).UnixMilli(), RecallAtK: 0.97,
				MaxAbsError: uint64(21000 + 1000*m), MeanAbsError: 8400, MaxRelError: 0.0031,
				SpeedErrorBound: &model.Bound{MaxOvercount: math.Round(top * 0.0017), Probability: 1 - math.Exp(-5)}}
		}
		out = append(out, l)
	}
	return out
}

// list builds one list of n items whose views fall off like a Zipf distribution from top. A
// batch list is exact; a speed list is live, or provisional (with late drops) once its
// calendar window has ended, and has an error bound when sketch.
func list(window string, start, end, asOf time.Time, src model.Source, sketch bool, n int, top float64, seed int) model.List {
	version := asOf.UnixMilli()
	exact := src == model.SourceBatch
	if exact {
		version = asOf.Add(2 * time.Hour).UnixMilli()
	}
	l := model.List{Kind: model.ListItems, Window: window, Start: start, End: end, AsOf: asOf, Version: version, Source: src, Exact: exact,
		Status: model.StatusLive, ComputedAt: asOf.Add(5 * time.Second)}
	switch {
	case exact:
		l.Status = model.StatusExact
	case !start.IsZero() && !asOf.Before(end):
		l.Status, l.DroppedLate = model.StatusProvisional, uint64(3+7*seed)
	}
	if !exact && sketch {
		// the month sketch of docs/requirements.md: w = 2^18, d = 5 over a partition's share
		// of views.
		l.ErrorBound = &model.Bound{MaxOvercount: math.Round(top * 0.0017), Probability: 1 - math.Exp(-5)}
	}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("vid-%04x", (i*7919+seed*104729)%65536)
		l.Items = append(l.Items, model.Item{Rank: i + 1, ItemID: id, Title: titles[(i+seed)%len(titles)],
			Thumbnail: strings.ReplaceAll(ThumbnailURL, "{id}", id), Views: uint64(top / math.Pow(float64(i+1), 0.8)), Exact: exact})
	}
	return l
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Seed writes Lists(now) to st.
func Seed(ctx context.Context, st store.Store, now time.Time) error {
	for _, l := range Lists(now) {
		if err := st.Put(ctx, l); err != nil {
			return fmt.Errorf("seed %s: %w", l.Key(), err)
		}
	}
	return nil
}
