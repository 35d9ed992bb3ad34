package api

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"trending/model"
	"trending/model/windowset"
	"trending/serving/store/storetest"
)

// seed004Fixture serves the seed-004 preset (minute, hour, day, 7d; calendar day and week) over a
// store holding the default set's lists too, and those of the preset.
func seed004Fixture(t *testing.T) *fixture {
	t.Helper()
	ws, err := windowset.Preset("seed-004")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(c *Config) { c.Windows = ws })
	week := model.Week.Align(storetest.T0)
	for _, l := range []model.List{
		storetest.MakeList("minute", time.Time{}, 30, model.SourceSpeed, 5, 40),
		storetest.MakeList("7d", time.Time{}, 30, model.SourceSpeed, 50, 70000),
		storetest.MakeList("week", week, 30, model.SourceSpeed, 20, 5000),
		storetest.MakeList("week", model.Week.Back(week, 1), 100, model.SourceBatch, 20, 9000),
	} {
		if err := f.st.Put(context.Background(), l); err != nil {
			t.Fatalf("put %s: %v", l.Key(), err)
		}
	}
	if err := f.srv.Cache().Refresh(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestConfiguredWindowsServed(t *testing.T) {
	f := seed004Fixture(t)
	week := model.Week.Align(storetest.T0)
	for _, c := range []struct{ target, window string }{
		{"/v1/trending?window=minute", "minute"},
		{"/v1/trending?window=7d&limit=3", "7d"},
		{"/v1/trending?window=hour", "hour"},
		{"/v1/trending?window=1h", "hour"}, // the seed-003 aliases
		{"/v1/trending?window=24h", "day"},
		{"/v1/trending?window=week&start=" + week.Format(time.RFC3339), "week"},
	} {
		w := f.get(c.target)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", c.target, w.Code, w.Body)
		}
		if got := decode[ListResponse](t, w); got.Window != c.window {
			t.Errorf("%s: window %q, want %q", c.target, got.Window, c.window)
		}
	}
	last := model.Week.Back(week, 1)
	if l := decode[ListResponse](t, f.get("/v1/trending?window=week&start="+last.Format(time.RFC3339))); l.Status != model.StatusExact || !l.End.Equal(week) {
		t.Errorf("last week: status %s end %s, want exact ending %s", l.Status, l.End, week)
	}
	ws := decode[WindowsResponse](t, f.get("/v1/windows?window=week"))
	if len(ws.Windows) != 13 || ws.Counts["exact"] != 1 || ws.Counts["live"] != 1 {
		t.Errorf("/v1/windows?window=week: %d windows, counts %+v", len(ws.Windows), ws.Counts)
	}
	if v := decode[TopVideosResponse](t, f.get("/v1/top-videos?window=1h")); v.Window != "1h" || len(v.Videos) == 0 {
		t.Errorf("top-videos 1h: %+v", v)
	}
}

// TestUnconfiguredWindowsRefused: names outside the set are a 400 that lists the set, even
// when the store holds such lists (the default set's, here).
func TestUnconfiguredWindowsRefused(t *testing.T) {
	f := seed004Fixture(t)
	const served = "live windows minute, hour, day, 7d (aliases 1h, 24h); calendar windows day, week"
	for _, c := range []struct{ target, detail string }{
		{"/v1/trending?window=month", served},
		{"/v1/trending?window=all", served},
		{"/v1/trending?window=week", served},
		{"/v1/trending?window=hour&start=2026-11-14T10:00:00Z", "drop start"},
		{"/v1/trending?window=month&start=2026-11-01T00:00:00Z", served},
		{"/v1/trending?window=week&start=2026-11-10T00:00:00Z", "Monday"},
		{"/v1/trending/stream?window=month", served},
		{"/v1/windows?window=hour", "use one of day, week"},
		{"/v1/top-videos?window=all", "use 1h or 24h"},
		{"/v1/windows/config?x=1", "no parameters"},
	} {
		w := f.get(c.target)
		if w.Code != 400 {
			t.Errorf("%s: status %d, want 400: %s", c.target, w.Code, w.Body)
			continue
		}
		if e := decode[ErrorResponse](t, w); !strings.Contains(e.Detail, c.detail) {
			t.Errorf("%s: detail %q, want it to contain %q", c.target, e.Detail, c.detail)
		}
	}
}

func TestWindowsConfig(t *testing.T) {
	f := seed004Fixture(t)
	w := f.get("/v1/windows/config")
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var got WindowsConfigResponse
	if err := json.Unmarshal(w.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Live, ",") != "minute,hour,day,7d" || strings.Join(model.PeriodStrings(got.Calendar), ",") != "day,week" {
		t.Errorf("live %v calendar %v", got.Live, model.PeriodStrings(got.Calendar))
	}
	if len(got.Aliases) != 2 || got.Aliases[0] != (WindowAlias{"1h", "hour"}) || got.Aliases[1] != (WindowAlias{"24h", "day"}) {
		t.Errorf("aliases %v", got.Aliases)
	}
	if c := got.Windows[3]; c != (WindowConfig{Name: "7d", Kind: "sliding", Length: "7d", Bucket: "24h", Mode: "sketch"}) {
		t.Errorf("7d: %+v", c)
	}
	// The default set, as before the set was configuration.
	d := newFixture(t, nil)
	if err := json.Unmarshal(d.get("/v1/windows/config").Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Live, ",") != "hour,day,month,all" || strings.Join(model.PeriodStrings(got.Calendar), ",") != "hour,day,month" {
		t.Errorf("default: live %v calendar %v", got.Live, model.PeriodStrings(got.Calendar))
	}
}

// decayedFixture serves the default set plus a decayed window "now" (one-hour half-life),
// with its list in the store: the speed layer's, live, ranked by score.
func decayedFixture(t *testing.T) *fixture {
	t.Helper()
	ws, err := windowset.Parse(windowset.DefaultSpec + ",now=decayed:1h")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(c *Config) { c.Windows = ws })
	at := storetest.T0.Add(29*time.Minute + 12*time.Second)
	l := model.List{Window: "now", AsOf: at, Version: at.UnixMilli(), Source: model.SourceSpeed, Status: model.StatusLive, ComputedAt: at,
		HalfLifeSeconds: 3600, ErrorBound: &model.Bound{MaxOvercount: 0.75, Probability: 0.993},
		Items: []model.Item{
			{Rank: 1, ItemID: "V9", Views: 1234, DecayedScore: 1233.5, Title: "Burst"},
			{Rank: 2, ItemID: "V1", Views: 87, DecayedScore: 86.625},
			{Rank: 3, ItemID: "V2", Views: 0, DecayedScore: 0.25},
		}}
	if err := f.st.Put(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Cache().Refresh(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestDecayedListServed: a decayed list is served like any live list, with each item's score
// beside its views (the score rounded) and the half-life; Arrow adds a score column and the
// half-life to its metadata; /v1/windows/config describes the window.
func TestDecayedListServed(t *testing.T) {
	f := decayedFixture(t)
	w := f.get("/v1/trending?window=now&limit=2")
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	body := w.Body.String()
	for _, want := range []string{`"half_life_seconds":3600`, `"item_id":"V9","title":"Burst","views":1234,"exact":false,"score":1233.5}`,
		`"views":87,"exact":false,"score":86.625}`, `"status":"live"`} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "window_start") || strings.Contains(body, `"V2"`) {
		t.Errorf("body has a window start or more than the limit:\n%s", body)
	}
	// Lists of views carry no score.
	if body := f.get("/v1/trending?window=hour").Body.String(); strings.Contains(body, `"score"`) || strings.Contains(body, "half_life") {
		t.Errorf("the hour's list has a score or half-life")
	}
	var cfg WindowsConfigResponse
	if err := json.Unmarshal(f.get("/v1/windows/config").Body.Bytes(), &cfg); err != nil {
		t.Fatal(err)
	}
	if c := cfg.Windows[len(cfg.Windows)-1]; c != (WindowConfig{Name: "now", Kind: "decayed", HalfLife: "1h", Mode: "auto"}) || cfg.Live[len(cfg.Live)-1] != "now" {
		t.Errorf("windows config: %+v, live %v", c, cfg.Live)
	}
	e, _ := f.srv.cache.Get("now", time.Time{})
	b, err := encodeArrow(e.list, 3)
	if err != nil {
		t.Fatal(err)
	}
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	if hl, ok := r.Schema().Metadata().GetValue("half_life_seconds"); !ok || hl != "3600" {
		t.Errorf("arrow metadata half_life_seconds %q", hl)
	}
	if !r.Next() {
		t.Fatal("no record batch")
	}
	rec := r.RecordBatch()
	if rec.Schema().Field(6).Name != "score" || rec.Column(6).(*array.Float64).Value(1) != 86.625 {
		t.Errorf("arrow score column: %v", rec.Schema())
	}
}
