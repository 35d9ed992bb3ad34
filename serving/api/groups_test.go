package api

import (
	"bytes"
	"context"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/ipc"

	"trending/model"
	"trending/model/windowset"
	"trending/serving/store/storetest"
)

var twoRegions = windowset.Groups{By: windowset.ByRegion, Values: []string{"eu", "us"}}

// groupLists are lists per region beside the fixture's lists of all items.
func groupLists() []model.List {
	t0 := storetest.T0
	eu := storetest.MakeList("hour", time.Time{}, 30, model.SourceSpeed, 5, 40)
	eu.Group = "eu"
	euHour := storetest.MakeList("hour", t0.Add(-time.Hour), 101, model.SourceBatch, 4, 30)
	euHour.Group = "eu"
	euHour.Reconciliation = &model.Reconciliation{SpeedVersion: 29, RecallAtK: 1, MaxAbsError: 2}
	old := storetest.MakeList("hour", t0.Add(-1000*time.Hour), 100, model.SourceBatch, 4, 30) // past retention
	old.Group = "eu"
	usDay := storetest.MakeList("day", time.Time{}, 30, model.SourceSpeed, 3, 900)
	usDay.Group = "us"
	mars := storetest.MakeList("hour", time.Time{}, 30, model.SourceSpeed, 3, 7) // not configured
	mars.Group = "mars"
	return []model.List{eu, euHour, old, usDay, mars}
}

func groupFixture(t *testing.T, g windowset.Groups) *fixture {
	t.Helper()
	f := newFixture(t, func(c *Config) { c.Windows.Groups = g })
	for _, l := range groupLists() {
		if err := f.st.Put(context.Background(), l); err != nil {
			t.Fatalf("put %s: %v", l.Key(), err)
		}
	}
	if err := f.srv.Cache().Refresh(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestGroupListsServed: ?region= picks a region's list, live or calendar, as one lookup; the
// response names its window and region; values without lists are a 400 that lists the ones
// with, a configured value without a list yet is a 404, and /v1/windows and
// /v1/windows/config know the regions. With every value seen, any well-formed value is
// taken, and the full refresh finds lists by value.
func TestGroupListsServed(t *testing.T) {
	for _, g := range []windowset.Groups{twoRegions, {By: windowset.ByRegion, Every: true, Max: 8}} {
		t.Run(g.String(), func(t *testing.T) {
			f := groupFixture(t, g)
			l := decode[ListResponse](t, f.get("/v1/trending?window=hour&region=eu&limit=3"))
			if l.Window != "hour" || l.Region != "eu" || len(l.Items) != 3 || l.Items[0].Views != 40 {
				t.Fatalf("hour eu: %+v", l)
			}
			all := decode[ListResponse](t, f.get("/v1/trending?window=hour&limit=3"))
			if all.Region != "" || all.Items[0].Views == l.Items[0].Views {
				t.Fatalf("the list of all items answers region=eu, or the reverse: %+v", all)
			}
			start := storetest.T0.Add(-time.Hour).Format(time.RFC3339)
			cal := decode[ListResponse](t, f.get("/v1/trending?window=hour&region=eu&start="+start))
			if cal.Region != "eu" || cal.Status != model.StatusExact || !cal.Start.Equal(storetest.T0.Add(-time.Hour)) {
				t.Fatalf("calendar hour eu: %+v", cal)
			}
			if d := decode[ListResponse](t, f.get("/v1/trending?window=24h&region=us")); d.Window != "day" || d.Region != "us" {
				t.Fatalf("alias 24h us: %+v", d)
			}
			w := f.get("/v1/trending?window=day&region=eu")
			if w.Code != 404 || !strings.Contains(decode[ErrorResponse](t, w).Detail, "no live day list of region eu yet") {
				t.Fatalf("day eu: %d %s", w.Code, w.Body)
			}
			w = f.get("/v1/trending?window=hour&region=eu&start=" + storetest.T0.Add(-2*time.Hour).Format(time.RFC3339))
			if w.Code != 404 || !strings.Contains(decode[ErrorResponse](t, w).Detail, "hour window of region eu starting 2026-11-14T08:00:00Z: see GET /v1/windows?window=hour&region=eu") {
				t.Fatalf("uncomputed calendar hour eu: %d %s", w.Code, w.Body)
			}
			ws := decode[WindowsResponse](t, f.get("/v1/windows?window=hour&region=eu"))
			if ws.Region != "eu" || ws.Counts["exact"] != 1 || ws.Counts["live"]+ws.Counts["provisional"] != 0 {
				t.Fatalf("/v1/windows hour eu: region %q counts %v", ws.Region, ws.Counts)
			}
			if ws := decode[WindowsResponse](t, f.get("/v1/windows?window=hour")); ws.Region != "" || ws.Counts["exact"] != 1 || ws.Counts["live"] != 1 {
				t.Fatalf("/v1/windows hour: counts %v", ws.Counts)
			}
			cfg := decode[WindowsConfigResponse](t, f.get("/v1/windows/config"))
			if cfg.Groups == nil || cfg.Groups.By != "region" || cfg.Groups.Every != g.Every || strings.Join(cfg.Groups.Values, ",") != strings.Join(g.Values, ",") {
				t.Fatalf("/v1/windows/config groups %+v", cfg.Groups)
			}
			bad := map[string]string{
				"/v1/trending?window=hour&region=a/b":                                        `region \"a/b\"`,
				"/v1/trending?window=hour&region=":                                           `region \"\"`,
				"/v1/trending?window=hour&region=eu&region=us":                               "given 2 times",
				"/v1/windows?window=hour&region=" + url.QueryEscape(strings.Repeat("x", 65)): "region",
			}
			if !g.Every {
				bad["/v1/trending?window=hour&region=mars"] = "keeps lists of region eu, us"
			} else if w := f.get("/v1/trending?window=hour&region=mars"); w.Code != 200 {
				t.Fatalf("every value seen: mars %d %s", w.Code, w.Body)
			}
			for target, want := range bad {
				w := f.get(target)
				if w.Code != 400 || !strings.Contains(w.Body.String(), want) {
					t.Errorf("%s: %d %s, want 400 with %q", target, w.Code, w.Body, want)
				}
			}
			// The reconciliation summary is of the lists of all items (and topics): the eu
			// hour's reconciliation stays in its own body.
			for _, lr := range decode[ReconciliationResponse](t, f.get("/v1/reconciliation")).Levels {
				if strings.HasPrefix(lr.Level, "hour/") {
					t.Errorf("reconciliation level %q: lists per region are not summarized", lr.Level)
				}
			}
			// The list past retention is not cached.
			if w := f.get("/v1/trending?window=hour&region=eu&start=" + storetest.T0.Add(-1000*time.Hour).Format(time.RFC3339)); w.Code != 404 {
				t.Errorf("a calendar list past retention: %d", w.Code)
			}
		})
	}
}

// TestGroupListsArrowAndStream: the Arrow stream of a region's list names its region in the
// metadata, and the stream of region=eu pushes that list.
func TestGroupListsArrowAndStream(t *testing.T) {
	f := groupFixture(t, twoRegions)
	w := f.get("/v1/trending?window=hour&region=eu", "Accept", ArrowMediaType)
	r, err := ipc.NewReader(bytes.NewReader(w.Body.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Release()
	md := map[string]string{}
	for i, k := range r.Schema().Metadata().Keys() {
		md[k] = r.Schema().Metadata().Values()[i]
	}
	if md["window"] != "hour" || md["region"] != "eu" {
		t.Fatalf("arrow metadata %v", md)
	}
	l := startLive(t, liveOpts{mod: func(c *Config) { c.Windows.Groups = twoRegions }})
	for _, gl := range groupLists() {
		l.put(gl)
	}
	c := l.stream("/v1/trending/stream?window=hour&region=eu&limit=2")
	ev := c.next()
	if want := l.get("/v1/trending?window=hour&region=eu&limit=2"); ev.data != string(want) || !strings.Contains(ev.data, `"region":"eu"`) {
		t.Fatalf("first event %q, want the GET body %q", ev.data, want)
	}
}

// TestNoGroupsConfigured: without lists per region, region= is a 400 that says so, and the
// windows config has no groups.
func TestNoGroupsConfigured(t *testing.T) {
	f := newFixture(t, nil)
	w := f.get("/v1/trending?window=hour&region=eu")
	if w.Code != 400 || !strings.Contains(w.Body.String(), "keeps no lists per region") {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	if cfg := decode[WindowsConfigResponse](t, f.get("/v1/windows/config")); cfg.Groups != nil {
		t.Fatalf("groups %+v", cfg.Groups)
	}
}
