package api

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"trending/model"
	"trending/model/windowset"
	"trending/serving/store/storetest"
)

// seed004Fixture serves the seed-004 preset (minute, hour, day, 7d; calendar week) over a
// store holding the default set's lists too, and those of the preset.
func seed004Fixture(t *testing.T) *fixture {
	t.Helper()
	ws, err := windowset.Preset("seed-004")
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(c *Config) { c.Windows = ws })
	week := model.Align("week", storetest.T0)
	for _, l := range []model.List{
		storetest.MakeList("minute", time.Time{}, 30, model.SourceSpeed, 5, 40),
		storetest.MakeList("7d", time.Time{}, 30, model.SourceSpeed, 50, 70000),
		storetest.MakeList("week", week, 30, model.SourceSpeed, 20, 5000),
		storetest.MakeList("week", model.Back("week", week, 1), 100, model.SourceBatch, 20, 9000),
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
	week := model.Align("week", storetest.T0)
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
	last := model.Back("week", week, 1)
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
	const served = "live windows minute, hour, day, 7d (aliases 1h, 24h); calendar windows week"
	for _, c := range []struct{ target, detail string }{
		{"/v1/trending?window=month", served},
		{"/v1/trending?window=all", served},
		{"/v1/trending?window=week", served},
		{"/v1/trending?window=hour&start=2026-11-14T10:00:00Z", "drop start"},
		{"/v1/trending?window=month&start=2026-11-01T00:00:00Z", served},
		{"/v1/trending?window=week&start=2026-11-10T00:00:00Z", "Monday"},
		{"/v1/trending/stream?window=month", served},
		{"/v1/windows?window=hour", "use one of week"},
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
	if strings.Join(got.Live, ",") != "minute,hour,day,7d" || strings.Join(got.Calendar, ",") != "week" {
		t.Errorf("live %v calendar %v", got.Live, got.Calendar)
	}
	if len(got.Aliases) != 2 || got.Aliases[0] != (WindowAlias{"1h", "hour"}) || got.Aliases[1] != (WindowAlias{"24h", "day"}) {
		t.Errorf("aliases %v", got.Aliases)
	}
	if c := got.Windows[3]; c != (WindowConfig{Name: "7d", Kind: "sliding", Length: "7d", Bucket: "1h", Mode: "auto"}) {
		t.Errorf("7d: %+v", c)
	}
	// The default set, as before the set was configuration.
	d := newFixture(t, nil)
	if err := json.Unmarshal(d.get("/v1/windows/config").Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got.Live, ",") != "hour,day,month,all" || strings.Join(got.Calendar, ",") != "hour,day,month" {
		t.Errorf("default: live %v calendar %v", got.Live, got.Calendar)
	}
}
