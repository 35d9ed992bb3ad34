package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"trending/internal/setting"

	"trending/model"
	"trending/model/topicrules"
	"trending/model/windowset"
	"trending/serving/store/storetest"
)

func TestTrendingLive(t *testing.T) {
	f := newFixture(t, nil)
	w := f.get("/v1/trending?window=hour&limit=10")
	if w.Code != 200 {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	got := decode[ListResponse](t, w)
	want := seedLists()[0]
	if got.Window != "hour" || got.Version != want.Version || got.Source != model.SourceSpeed || got.Exact ||
		!got.Incomplete || len(got.StalePartitions) != 2 || got.ErrorBound == nil || got.ErrorBound.Probability != 0.993 ||
		!got.AsOf.Equal(want.AsOf) || !got.Start.IsZero() || !got.WindowStart.Equal(want.WindowStart) || !got.WindowEnd.Equal(want.AsOf) {
		t.Fatalf("list fields: %+v", got)
	}
	if len(got.Items) != 10 {
		t.Fatalf("limit 10: got %d items", len(got.Items))
	}
	for i, it := range got.Items {
		w := want.Items[i]
		if it.Rank != i+1 || it.ItemID != w.ItemID || it.Views != w.Views || it.Title != w.Title || it.Exact != w.Exact {
			t.Fatalf("item %d: got %+v, want %+v", i, it, w)
		}
	}
	if cc := w.Header().Get("Cache-Control"); cc != "public, max-age=30" {
		t.Errorf("Cache-Control %q", cc)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}

	t.Run("default limit 50", func(t *testing.T) {
		if n := len(decode[ListResponse](t, f.get("/v1/trending?window=hour")).Items); n != 50 {
			t.Fatalf("got %d items, want 50", n)
		}
	})
	t.Run("limit beyond the list returns the list", func(t *testing.T) {
		if n := len(decode[ListResponse](t, f.get("/v1/trending?window=day&limit=100")).Items); n != 100 {
			t.Fatalf("got %d items", n)
		}
	})
	t.Run("age_seconds follows the clock", func(t *testing.T) {
		f.advance(90 * time.Second)
		defer f.advance(-90 * time.Second)
		if age := decode[ListResponse](t, f.get("/v1/trending?window=hour&limit=10")).AgeSeconds; age != 90 {
			t.Fatalf("age_seconds %d, want 90", age)
		}
	})
	for _, win := range windowset.Default().Live() {
		t.Run("window "+win, func(t *testing.T) {
			got := decode[ListResponse](t, f.get("/v1/trending?window="+win+"&limit=3"))
			if got.Window != win || len(got.Items) != 3 {
				t.Fatalf("%+v", got)
			}
		})
	}
}

func TestTrendingCalendar(t *testing.T) {
	f := newFixture(t, nil)
	t0 := storetest.T0
	for _, c := range []struct {
		name, query string
		status      int
		source      model.Source
		exact       bool
	}{
		{"open hour, approximate", "window=hour&start=" + t0.Format(time.RFC3339), 200, model.SourceSpeed, false},
		{"closed hour, exact", "window=hour&start=" + t0.Add(-time.Hour).Format(time.RFC3339), 200, model.SourceBatch, true},
		{"offset form of the same instant", "window=hour&start=2026-11-14T10:00:00%2B01:00", 200, model.SourceBatch, true},
		{"unencoded + offset", "window=hour&start=2026-11-14T10:00:00+01:00", 200, model.SourceBatch, true},
		{"day", "window=day&start=2026-11-14T00:00:00Z", 200, model.SourceSpeed, false},
		{"previous month, exact", "window=month&start=2026-10-01T00:00:00Z", 200, model.SourceBatch, true},
		{"nobody computed it", "window=hour&start=" + t0.Add(-2*time.Hour).Format(time.RFC3339), 404, "", false},
		{"older than retention", "window=hour&start=2020-01-01T00:00:00Z", 404, "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := f.get("/v1/trending?" + c.query)
			if w.Code != c.status {
				t.Fatalf("status %d, want %d: %s", w.Code, c.status, w.Body)
			}
			if c.status != 200 {
				e := decode[ErrorResponse](t, w)
				if e.Error != codeNotFound || e.Detail == "" {
					t.Fatalf("error body %+v", e)
				}
				return
			}
			got := decode[ListResponse](t, w)
			if got.Source != c.source || got.Exact != c.exact || got.Start.IsZero() || !got.End.After(got.Start) ||
				!got.WindowStart.IsZero() || !got.WindowEnd.IsZero() {
				t.Fatalf("%+v", got)
			}
			if c.exact && (got.ErrorBound != nil || got.Reconciliation == nil && got.Window == "hour") {
				t.Fatalf("exact list: error bound %+v reconciliation %+v", got.ErrorBound, got.Reconciliation)
			}
		})
	}
}

func TestClientMistakes(t *testing.T) {
	f := newFixture(t, nil)
	for _, c := range []struct{ target, code, detail string }{
		{"/v1/trending", codeBadParameter, "window is required"},
		{"/v1/trending?window=week", codeBadParameter, "hour, day, month, all"},
		{"/v1/trending?window=hour&limit=0", codeBadParameter, "from 1 to 100"},
		{"/v1/trending?window=hour&limit=101", codeBadParameter, "from 1 to 100"},
		{"/v1/trending?window=hour&limit=-1", codeBadParameter, "from 1 to 100"},
		{"/v1/trending?window=hour&limit=1e2", codeBadParameter, "whole number"},
		{"/v1/trending?window=hour&limit=99999999999999999999", codeBadParameter, "whole number"},
		{"/v1/trending?window=hour&k=10", codeUnknownParameter, "window, limit, start"},
		{"/v1/trending?window=hour&window=day", codeBadParameter, "given 2 times"},
		{"/v1/trending?window=hour;limit=3", codeBadQuery, "does not parse"},
		{"/v1/trending?window=%zz", codeBadQuery, "does not parse"},
		{"/v1/trending?window=all&start=2026-11-14T10:00:00Z", codeBadParameter, "all has no calendar windows"},
		{"/v1/trending?window=hour&start=2026-11-14T10:05:00Z", codeBadParameter, "starts at 2026-11-14T10:00:00Z"},
		{"/v1/trending?window=day&start=2026-11-14T10:00:00Z", codeBadParameter, "midnight"},
		{"/v1/trending?window=month&start=2026-11-14T00:00:00Z", codeBadParameter, "1st"},
		{"/v1/trending?window=hour&start=2026-11-14T11:00:00Z", codeBadParameter, "in the future"},
		{"/v1/trending?window=hour&start=2026-11-14", codeBadParameter, "RFC 3339"},
		{"/v1/trending?window=hour&start=0000-01-01T00:00:00Z", codeBadParameter, "too early"},
		{"/v1/trending?window=hour&start=0001-01-01T00:00:00Z", codeBadParameter, "too early"},
		{"/v1/windows", codeBadParameter, "window is required"},
		{"/v1/windows?window=all", codeBadParameter, "hour, day, month"},
		{"/v1/windows?window=hour&from=2026-10-01T00:00:00Z", codeBadParameter, "at most 744"},
		{"/v1/windows?window=day&from=2020-01-01T00:00:00Z&to=2020-02-01T00:00:00Z", codeBadParameter, "older than the API keeps"},
		{"/v1/windows?window=hour&from=2026-11-14T10:00:00Z&to=2026-11-14T10:00:00Z", codeBadParameter, "not before"},
		{"/v1/windows?window=hour&to=2026-11-14T13:00:00Z", codeBadParameter, "in the future"},
		{"/v1/windows?window=hour&from=2026-11-14T09:30:00Z", codeBadParameter, "not the start"},
		{"/v1/windows?window=month&from=0002-01-01T00:00:00Z", codeBadParameter, "at most 120"},
		{"/v1/windows?window=hour&limit=3", codeUnknownParameter, "window, from, to"},
	} {
		t.Run(c.target, func(t *testing.T) {
			w := f.get(c.target)
			if w.Code != 400 {
				t.Fatalf("status %d, want 400: %s", w.Code, w.Body)
			}
			e := decode[ErrorResponse](t, w)
			if e.Error != c.code || !strings.Contains(e.Detail, c.detail) {
				t.Fatalf("got %+v, want error %q with detail containing %q", e, c.code, c.detail)
			}
		})
	}
}

func TestConfiguredMaxLimit(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.MaxLimit = 1000 })
	if w := f.get("/v1/trending?window=hour&limit=1000"); w.Code != 200 || len(decode[ListResponse](t, w).Items) != 120 {
		t.Fatalf("limit 1000 with max 1000: %d", w.Code)
	}
	if w := f.get("/v1/trending?window=hour&limit=1001"); w.Code != 400 || !strings.Contains(w.Body.String(), "from 1 to 1000") {
		t.Fatalf("limit 1001: %d %s", w.Code, w.Body)
	}
}

// TestDefaultConfigForK: the limits follow the length of the lists the writers keep, so a
// deployment of K=1,000 serves limit=1000 and k=1000 (seed 003) without a second setting;
// K=100 is DefaultConfig.
func TestDefaultConfigForK(t *testing.T) {
	for _, c := range []struct{ k, max, def int }{{100, 100, 50}, {1000, 1000, 50}, {20, 20, 20}, {1, 1, 1}} {
		got := DefaultConfigForK(c.k)
		if got.MaxLimit != c.max || got.DefaultLimit != c.def {
			t.Errorf("K %d: max %d default %d, want %d and %d", c.k, got.MaxLimit, got.DefaultLimit, c.max, c.def)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("K %d: %v", c.k, err)
		}
	}
	if d, k := DefaultConfig(), DefaultConfigForK(100); d.MaxLimit != k.MaxLimit || d.DefaultLimit != k.DefaultLimit {
		t.Errorf("DefaultConfig limits %d/%d, DefaultConfigForK(100) %d/%d", d.MaxLimit, d.DefaultLimit, k.MaxLimit, k.DefaultLimit)
	}
	for _, k := range []int{0, 1001} {
		if err := DefaultConfigForK(k).Validate(); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("max limit %d", k)) {
			t.Errorf("K %d: %v, want the max limit refused", k, err)
		}
	}
	f := newFixture(t, func(c *Config) {
		k := DefaultConfigForK(1000)
		c.MaxLimit, c.DefaultLimit = k.MaxLimit, k.DefaultLimit
	})
	if w := f.get("/v1/top-videos?window=1h&k=1000"); w.Code != 200 || len(decode[TopVideosResponse](t, w).Videos) != 120 {
		t.Fatalf("k 1000 with K 1000: %d %s", w.Code, w.Body)
	}
	if w := f.get("/v1/top-videos?window=1h&k=1001"); w.Code != 400 || !strings.Contains(w.Body.String(), "from 1 to 1000") {
		t.Fatalf("k 1001 with K 1000: %d %s", w.Code, w.Body)
	}
}

func TestConditionalAndCompressed(t *testing.T) {
	f := newFixture(t, nil)
	w := f.get("/v1/trending?window=hour&limit=20")
	etag := w.Header().Get("ETag")
	if !strings.HasPrefix(etag, `W/"`) {
		t.Fatalf("ETag %q", etag)
	}
	if w2 := f.get("/v1/trending?window=hour&limit=20", "If-None-Match", etag); w2.Code != 304 || w2.Body.Len() != 0 {
		t.Fatalf("If-None-Match same tag: %d %q", w2.Code, w2.Body)
	}
	if w2 := f.get("/v1/trending?window=hour&limit=20", "If-None-Match", `"other", `+etag); w2.Code != 304 {
		t.Fatalf("If-None-Match list: %d", w2.Code)
	}
	if w2 := f.get("/v1/trending?window=hour&limit=21", "If-None-Match", etag); w2.Code != 200 {
		t.Fatalf("another limit is another representation: %d", w2.Code)
	}
	f.advance(5 * time.Second) // a new second: a new age_seconds, the same list
	if w2 := f.get("/v1/trending?window=hour&limit=20", "If-None-Match", etag); w2.Code != 304 {
		t.Fatalf("same list a few seconds later: %d", w2.Code)
	}

	// A new version of the list changes the tag.
	nl := seedLists()[0]
	nl.Version, nl.AsOf = 31, nl.AsOf.Add(time.Minute)
	if err := f.st.Put(context.Background(), nl); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Cache().Refresh(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if w2 := f.get("/v1/trending?window=hour&limit=20", "If-None-Match", etag); w2.Code != 200 || decode[ListResponse](t, w2).Version != 31 {
		t.Fatalf("after a new version: %d", w2.Code)
	}

	plain := f.get("/v1/trending?window=hour&limit=100")
	gz := f.get("/v1/trending?window=hour&limit=100", "Accept-Encoding", "br;q=1.0, gzip;q=0.8")
	if gz.Header().Get("Content-Encoding") != "gzip" || gz.Header().Get("ETag") == plain.Header().Get("ETag") {
		t.Fatalf("gzip headers: %v", gz.Header())
	}
	zr, err := gzip.NewReader(gz.Body)
	if err != nil {
		t.Fatal(err)
	}
	unz, _ := io.ReadAll(zr)
	if !bytes.Equal(unz, plain.Body.Bytes()) {
		t.Fatalf("gunzipped body differs from the plain one")
	}
	if gz.Body.Len() >= plain.Body.Len()/2 {
		t.Errorf("gzip %d bytes vs %d plain: expected well under half", gz.Body.Len(), plain.Body.Len())
	}
	if w := f.get("/v1/trending?window=hour", "Accept-Encoding", "gzip;q=0"); w.Header().Get("Content-Encoding") != "" {
		t.Fatal("gzip;q=0 must not be gzipped")
	}
	head := f.do(http.MethodHead, "/v1/trending?window=hour&limit=100")
	if head.Code != 200 || head.Body.Len() != 0 || head.Header().Get("Content-Length") != plain.Header().Get("Content-Length") {
		t.Fatalf("HEAD: %d, %d bytes, length %q", head.Code, head.Body.Len(), head.Header().Get("Content-Length"))
	}
}

func TestAcceptsGzip(t *testing.T) {
	for in, want := range map[string]bool{"": false, "gzip": true, "GZIP": true, "deflate, gzip": true, "br": false,
		"*": true, "gzip;q=0": false, "gzip; q=0.5": true, "gzip;q=0.000": false, "identity": false} {
		if got := acceptsGzip(in); got != want {
			t.Errorf("acceptsGzip(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestWindows(t *testing.T) {
	f := newFixture(t, nil)
	w := f.get("/v1/windows?window=hour&from=2026-11-14T06:00:00Z&to=2026-11-14T11:00:00Z")
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	got := decode[WindowsResponse](t, w)
	want := []string{StatusMissing, StatusProvisional, StatusMissing, StatusExact, StatusLive}
	if len(got.Windows) != len(want) {
		t.Fatalf("got %d windows, want %d", len(got.Windows), len(want))
	}
	for i, ws := range got.Windows {
		if ws.Status != want[i] || !ws.Start.Equal(storetest.T0.Add(time.Duration(i-4)*time.Hour)) {
			t.Errorf("window %d: %+v, want status %s", i, ws, want[i])
		}
		if ws.Open != (i == 4) {
			t.Errorf("window %d open=%v", i, ws.Open)
		}
	}
	if ex := got.Windows[3]; ex.Source != model.SourceBatch || ex.Version != 100 || ex.Reconciliation == nil || ex.Items != 10 || ex.ComputedAt == nil {
		t.Errorf("exact window: %+v", ex)
	}
	if prov := got.Windows[1]; prov.DroppedLate != 3 || prov.Source != model.SourceSpeed {
		t.Errorf("provisional window: %+v, want dropped_late 3", prov)
	}
	if got.Counts[StatusExact] != 1 || got.Counts[StatusProvisional] != 1 || got.Counts[StatusLive] != 1 || got.Counts[StatusMissing] != 2 || len(got.Counts) != 4 {
		t.Errorf("counts %v", got.Counts)
	}
	t.Run("defaults: the last 24 hours up to the open one", func(t *testing.T) {
		got := decode[WindowsResponse](t, f.get("/v1/windows?window=hour"))
		if len(got.Windows) != 24 || !got.To.Equal(storetest.T0.Add(time.Hour)) {
			t.Fatalf("%d windows to %v", len(got.Windows), got.To)
		}
	})
	t.Run("months", func(t *testing.T) {
		got := decode[WindowsResponse](t, f.get("/v1/windows?window=month&from=2026-09-01T00:00:00Z"))
		if len(got.Windows) != 3 || got.Windows[1].Status != StatusExact || got.Windows[2].Status != StatusMissing {
			t.Fatalf("%+v", got.Windows)
		}
	})
	t.Run("the largest range is allowed", func(t *testing.T) {
		if w := f.get("/v1/windows?window=hour&from=2026-10-14T11:00:00Z"); w.Code != 200 || len(decode[WindowsResponse](t, w).Windows) != 744 {
			t.Fatalf("%d", w.Code)
		}
	})
	t.Run("304", func(t *testing.T) {
		w := f.get("/v1/windows?window=hour")
		f.advance(time.Second)
		defer f.advance(-time.Second)
		if w2 := f.get("/v1/windows?window=hour", "If-None-Match", w.Header().Get("ETag")); w2.Code != 304 {
			t.Fatalf("%d", w2.Code)
		}
	})
}

// TestBatchTurnsExact: the windows view and the list flip from approximate to exact when the
// batch layer's list lands, within one refresh.
func TestBatchTurnsExact(t *testing.T) {
	f := newFixture(t, nil)
	start := storetest.T0.Add(-3 * time.Hour)
	q := "/v1/trending?window=hour&start=" + start.Format(time.RFC3339)
	if got := decode[ListResponse](t, f.get(q)); got.Exact || got.Status != model.StatusProvisional || got.DroppedLate != 3 || got.Items[0].Exact {
		t.Fatalf("before the batch the window is provisional, not exact: %+v", got)
	}
	if err := f.st.Put(context.Background(), storetest.MakeList("hour", start, 200, model.SourceBatch, 5, 49)); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Cache().Refresh(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if got := decode[ListResponse](t, f.get(q)); !got.Exact || got.Status != model.StatusExact || got.Source != model.SourceBatch || !got.Items[0].Exact {
		t.Fatalf("after the batch: %+v", got)
	}
	ws := decode[WindowsResponse](t, f.get("/v1/windows?window=hour&from="+start.Format(time.RFC3339)+"&to="+start.Add(time.Hour).Format(time.RFC3339)))
	if ws.Windows[0].Status != StatusExact {
		t.Fatalf("windows: %+v", ws.Windows[0])
	}
}

// TestStoreDown: while the store is unreachable the API keeps serving the lists it holds
// and stays ready, /readyz's body and trending_serving_store_up saying the store is down,
// until the newest load is ServeStaleFor old; then 503 with the reason; everything recovers.
func TestStoreDown(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.ServeStaleFor = 10 * time.Minute })
	ctx := context.Background()
	w := f.get("/readyz")
	if r := decode[ReadyResponse](t, w); w.Code != 200 || r.Store != StoreOK || !r.StoreFailingSince.IsZero() || r.StoreError != "" || r.Lists == 0 {
		t.Fatalf("readyz while healthy: %d %s", w.Code, w.Body)
	}
	loaded := f.now()
	f.st.down.Store(true)
	if err := f.srv.Cache().Refresh(ctx, false); err == nil {
		t.Fatal("refresh against a down store succeeded")
	}
	failed := f.now()
	f.advance(9 * time.Minute)
	f.srv.Cache().Refresh(ctx, true)
	w = f.get("/readyz")
	r := decode[ReadyResponse](t, w)
	if w.Code != 200 || r.Store != StoreUnreachable || !r.StoreFailingSince.Equal(failed) || !r.LastRefresh.Equal(loaded) ||
		!strings.Contains(r.StoreError, "connection refused") || r.Lists == 0 {
		t.Fatalf("readyz 9m into the outage: %d %s, want 200, store unreachable since %v", w.Code, w.Body, failed)
	}
	m := scrape(t, f)
	for _, want := range []string{"trending_serving_store_up 0", `trending_serving_cache_refresh_failures_total{kind="full"} 1`,
		`trending_serving_cache_refresh_failures_total{kind="hot"} 1`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	f.advance(2 * time.Minute)
	f.srv.Cache().Refresh(ctx, false)
	w = f.get("/readyz")
	if w.Code != 503 {
		t.Fatalf("readyz with the newest lists 11m old: %d %s", w.Code, w.Body)
	}
	if e := decode[ErrorResponse](t, w); e.Error != codeNotReady || !strings.Contains(e.Detail, "connection refused") || !strings.Contains(e.Detail, "unreachable for 11m0s") {
		t.Fatalf("readyz body %+v", e)
	}
	calls := f.st.calls.Load()
	if w := f.get("/v1/trending?window=hour"); w.Code != 200 {
		t.Fatalf("list while the store is down: %d", w.Code)
	}
	if f.st.calls.Load() != calls {
		t.Fatal("a read touched the store")
	}
	f.st.down.Store(false)
	if err := f.srv.Cache().Refresh(ctx, false); err != nil {
		t.Fatal(err)
	}
	w = f.get("/readyz")
	if r := decode[ReadyResponse](t, w); w.Code != 200 || r.Store != StoreOK || !r.StoreFailingSince.IsZero() || r.StoreError != "" {
		t.Fatalf("readyz after recovery: %d %s", w.Code, w.Body)
	}
	if !strings.Contains(scrape(t, f), "trending_serving_store_up 1") {
		t.Error("store_up not back to 1")
	}
}

// TestServeStaleForOldReadiness: ServeStaleFor 30s is the readiness before it existed: 503
// half a minute into an outage.
func TestServeStaleForOldReadiness(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.ServeStaleFor = 30 * time.Second })
	f.st.down.Store(true)
	f.advance(31 * time.Second)
	f.srv.Cache().Refresh(context.Background(), false)
	if w := f.get("/readyz"); w.Code != 503 {
		t.Fatalf("readyz 31s after the last load, store down: %d %s", w.Code, w.Body)
	}
}

func TestNotLoaded(t *testing.T) {
	f := newFixture(t, nil)
	cfg := f.srv.cfg
	cfg.Registerer, cfg.Gatherer = nil, nil
	f.st.down.Store(true)
	srv, err := New(cfg, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.Cache().Refresh(context.Background(), true)
	f.h = srv.Handler()
	for _, target := range []string{"/readyz", "/v1/trending?window=hour", "/v1/windows?window=hour"} {
		w := f.get(target)
		if e := decode[ErrorResponse](t, w); w.Code != 503 || !strings.Contains(e.Detail, "not loaded yet") || w.Header().Get("Retry-After") == "" {
			t.Errorf("%s: %d %+v", target, w.Code, e)
		}
	}
	if w := f.get("/healthz"); w.Code != 200 {
		t.Errorf("healthz: %d", w.Code)
	}
	if w := f.get("/v1/trending?window=nope"); w.Code != 400 {
		t.Errorf("a client mistake is still a 400 before loading: %d", w.Code)
	}
}

func TestRetentionEviction(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.RetainHours = 3 })
	if _, ok := f.srv.Cache().Get("hour", storetest.T0.Add(-3*time.Hour)); ok {
		t.Fatal("a window past retention was loaded")
	}
	if _, ok := f.srv.Cache().Get("hour", storetest.T0.Add(-time.Hour)); !ok {
		t.Fatal("a retained window is missing")
	}
	f.advance(2 * time.Hour)
	if err := f.srv.Cache().Refresh(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if _, ok := f.srv.Cache().Get("hour", storetest.T0.Add(-time.Hour)); ok {
		t.Fatal("a window that fell out of retention is still cached")
	}
	if _, ok := f.srv.Cache().Get("hour", time.Time{}); !ok {
		t.Fatal("live list evicted")
	}
}

func TestOlderListNeverReplacesNewer(t *testing.T) {
	f := newFixture(t, nil)
	old := seedLists()[0]
	old.Version = 5
	f.srv.Cache().swap(testNow, []model.List{old})
	if e, _ := f.srv.Cache().Get("hour", time.Time{}); e.list.Version != 30 {
		t.Fatalf("a lagging replica's older list replaced the cached one: version %d", e.list.Version)
	}
	bad := seedLists()[1]
	bad.Version, bad.Items[3].Rank = 99, 17
	f.srv.Cache().swap(testNow, []model.List{bad})
	if e, _ := f.srv.Cache().Get("day", time.Time{}); e.list.Version != 30 {
		t.Fatal("an invalid list was cached")
	}
}

func TestRoutingAndMethods(t *testing.T) {
	f := newFixture(t, nil)
	w := f.do(http.MethodPost, "/v1/trending?window=hour")
	if w.Code != 405 || w.Header().Get("Allow") != "GET, HEAD" || decode[ErrorResponse](t, w).Error != codeMethod {
		t.Fatalf("POST: %d %v", w.Code, w.Header())
	}
	w = f.get("/v2/nothing")
	if w.Code != 404 || decode[ErrorResponse](t, w).Error != codeNotFound {
		t.Fatalf("unknown path: %d", w.Code)
	}
	if w := f.get("/healthz"); w.Code != 200 || strings.TrimSpace(w.Body.String()) != `{"status":"ok"}` {
		t.Fatalf("healthz %d %s", w.Code, w.Body)
	}
	for _, p := range []string{"/", "/index.html", "/app.js", "/style.css"} {
		w := f.get(p)
		if w.Code != 200 || w.Header().Get("Content-Security-Policy") == "" || w.Header().Get("ETag") == "" {
			t.Errorf("%s: %d %v", p, w.Code, w.Header())
		}
		if w2 := f.get(p, "If-None-Match", w.Header().Get("ETag")); w2.Code != 304 {
			t.Errorf("%s revalidation: %d", p, w2.Code)
		}
	}
}

func TestCORS(t *testing.T) {
	f := newFixture(t, func(c *Config) { c.CORSOrigins = []string{"https://dash.example.com"} })
	w := f.get("/v1/trending?window=hour", "Origin", "https://dash.example.com")
	if w.Header().Get("Access-Control-Allow-Origin") != "https://dash.example.com" || !strings.Contains(w.Header().Get("Access-Control-Expose-Headers"), "ETag") {
		t.Fatalf("allowed origin: %v", w.Header())
	}
	if w := f.get("/v1/trending?window=hour", "Origin", "https://evil.example.com"); w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("other origin allowed")
	}
	w = f.do(http.MethodOptions, "/v1/trending?window=hour", "Origin", "https://dash.example.com", "Access-Control-Request-Method", "GET")
	if w.Code != 204 || !strings.Contains(w.Header().Get("Access-Control-Allow-Methods"), "GET") {
		t.Fatalf("preflight: %d %v", w.Code, w.Header())
	}
	any := newFixture(t, func(c *Config) { c.CORSOrigins = []string{"*"} })
	if w := any.get("/v1/trending?window=hour", "Origin", "http://localhost:3000"); w.Header().Get("Access-Control-Allow-Origin") != "*" {
		t.Fatal("* does not allow any origin")
	}
	none := newFixture(t, nil)
	if w := none.get("/v1/trending?window=hour", "Origin", "http://localhost:3000"); w.Header().Get("Access-Control-Allow-Origin") != "" {
		t.Fatal("CORS on by default")
	}
}

func TestRequireToken(t *testing.T) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) })
	for _, c := range []struct {
		name, token, auth string
		want              int
	}{
		{"no token configured", "", "", 202},
		{"missing header", "s3cret", "", 401},
		{"wrong scheme", "s3cret", "Basic czNjcmV0", 401},
		{"empty bearer", "s3cret", "Bearer ", 401},
		{"wrong token", "s3cret", "Bearer guess", 403},
		{"prefix of the token", "s3cret", "Bearer s3cre", 403},
		{"right token", "s3cret", "Bearer s3cret", 202},
		{"scheme is case-insensitive", "s3cret", "bearer s3cret", 202},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fixture{t: t, h: RequireToken(c.token, ok)}
			w := f.do(http.MethodPost, "/v1/events", "Authorization", c.auth)
			if w.Code != c.want {
				t.Fatalf("status %d, want %d", w.Code, c.want)
			}
			if c.want == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if c.want >= 400 {
				decode[ErrorResponse](t, w)
			}
		})
	}
}

func scrape(t *testing.T, f *fixture) string {
	t.Helper()
	w := f.get("/metrics")
	if w.Code != 200 {
		t.Fatalf("/metrics: %d", w.Code)
	}
	return w.Body.String()
}

func TestMetrics(t *testing.T) {
	f := newFixture(t, nil)
	f.get("/v1/trending?window=hour")
	f.get("/v1/trending?window=bogus")
	f.advance(2 * time.Minute)
	m := scrape(t, f)
	for _, want := range []string{
		`trending_http_request_duration_seconds_count{code="200",route="/v1/trending"} 1`,
		`trending_http_request_duration_seconds_count{code="400",route="/v1/trending"} 1`,
		`trending_serving_list_age_seconds{window="hour"} 120`,
		`trending_serving_list_age_seconds{window="all"}`,
		`trending_serving_speed_lag_seconds`,
		`trending_serving_batch_lag_seconds`,
		`trending_serving_cache_lists{kind="hour",source="batch"} 1`,
		`trending_serving_cache_refreshes_total{kind="full"} 1`,
		`trending_serving_store_up 1`,
		`trending_serving_cache_bytes`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// TestServeDrains: cancelling Run's context finishes in-flight requests and returns nil.
func TestServeDrains(t *testing.T) {
	f := newFixture(t, nil)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String() + "/v1/trending?window=hour&limit=5"
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	var l ListResponse
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || len(l.Items) != 5 {
		t.Fatalf("over TCP: %v %d items", err, len(l.Items))
	}
	resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve after cancel: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after cancel")
	}
	if _, err := http.Get(url); err == nil {
		t.Fatal("still serving after shutdown")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"slow refresh", func(c *Config) { c.RefreshInterval = 10 * time.Second }, "refresh interval"},
		{"max limit too big", func(c *Config) { c.MaxLimit = 1001 }, "max limit 1001"},
		{"default over max", func(c *Config) { c.DefaultLimit = 200 }, "default limit 200"},
		{"cors with path", func(c *Config) { c.CORSOrigins = []string{"https://a.example.com/app"} }, "no path"},
		{"cors without scheme", func(c *Config) { c.CORSOrigins = []string{"a.example.com"} }, "want *"},
		{"no retention", func(c *Config) { c.RetainDays = 0 }, "retention"},
		{"tiny headers", func(c *Config) { c.MaxHeaderBytes = 10 }, "max header bytes"},
		{"no version poll", func(c *Config) { c.VersionPollInterval = 0 }, "version poll interval 0s: must be positive"},
		{"no streams", func(c *Config) { c.MaxStreams = 0 }, "max streams 0: must be at least 1"},
		{"no heartbeat", func(c *Config) { c.StreamHeartbeat = 0 }, "stream heartbeat 0s: must be positive"},
		{"no stream write timeout", func(c *Config) { c.StreamWriteTimeout = -time.Second }, "stream write timeout -1s: must be positive"},
		{"serve stale under a refresh", func(c *Config) { c.ServeStaleFor = time.Second }, "ServeStaleFor: 1s: must be at least the refresh interval 5s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			c.mod(&cfg)
			if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

// TestConfigServeStaleForByField: ServeStaleFor is reported by its field (internal/setting),
// so each command names its flag.
func TestConfigServeStaleForByField(t *testing.T) {
	cfg := DefaultConfig()
	cfg.ServeStaleFor = 0
	errs := setting.Errors(cfg.Validate())
	if len(errs) != 1 || errs[0].Field != "ServeStaleFor" {
		t.Fatalf("setting errors %v, want one for ServeStaleFor", errs)
	}
}

func TestHandleMountsRoute(t *testing.T) {
	f := newFixture(t, nil)
	err := f.srv.Handle(Route{Path: "/v1/events", Methods: []string{http.MethodPost}, Statuses: []int{202, 401, 403, 405},
		Handler: RequireToken("tok", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusAccepted) }))})
	if err != nil {
		t.Fatal(err)
	}
	if w := f.do(http.MethodPost, "/v1/events", "Authorization", "Bearer tok"); w.Code != 202 {
		t.Fatalf("mounted route: %d", w.Code)
	}
	if w := f.do(http.MethodPost, "/v1/events"); w.Code != 401 {
		t.Fatalf("mounted route without token: %d", w.Code)
	}
	if w := f.get("/v1/events"); w.Code != 405 || w.Header().Get("Allow") != "POST" {
		t.Fatalf("GET on a POST route: %d %v", w.Code, w.Header())
	}
	if !strings.Contains(scrape(t, f), `route="/v1/events"`) {
		t.Error("mounted route has no request metrics")
	}
	for _, p := range []string{"/v1/events", "/v1/trending", "/", "relative"} {
		if err := f.srv.Handle(Route{Path: p, Methods: []string{"POST"}, Handler: http.NotFoundHandler()}); err == nil {
			t.Errorf("Handle(%q) accepted a taken or invalid path", p)
		}
	}
}

func TestTopics(t *testing.T) {
	f := newFixture(t, nil)
	t.Run("default is the worldwide list", func(t *testing.T) {
		w := f.get("/v1/topics")
		if w.Code != http.StatusOK {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
		l := decode[ListResponse](t, w)
		if l.Window != "topics/world/volume" || len(l.Items) != 1 || l.Items[0].ItemID != "#marathon" || l.Items[0].Score != 5200 {
			t.Fatalf("got %+v", l)
		}
	})
	t.Run("a region's surge list with its fields", func(t *testing.T) {
		w := f.get("/v1/topics?region=eu&limit=2")
		if w.Code != http.StatusOK {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
		l := decode[ListResponse](t, w)
		want := []ItemResponse{
			{Rank: 1, ItemID: "#quake", Views: 3000, Score: 61, NoHistory: true},
			{Rank: 2, ItemID: "#marathon", Views: 3700, Score: 15.1, Expected: 198, NewShare: 0.02},
		}
		if l.Window != "topics/eu/surge" || !l.Incomplete || l.ErrorBound == nil || len(l.Items) != 2 || l.Items[0] != want[0] || l.Items[1] != want[1] {
			t.Fatalf("got %+v", l)
		}
		if strings.Contains(w.Body.String(), `"review"`) {
			t.Errorf("a false flag was sent: %s", w.Body)
		}
	})
	for _, c := range []struct {
		target string
		status int
		detail string
	}{
		{"/v1/topics?region=mars", 400, "use one of world, eu, jp (default world)"},
		{"/v1/topics?region=eu&score=volume", 400, "the eu list is scored by surge"},
		{"/v1/topics?region=eu&score=surge", 200, ""},
		{"/v1/topics?limit=101", 400, "from 1 to 100"},
		{"/v1/topics?window=hour", 400, "unknown parameter"},
		{"/v1/topics?region=jp", 404, "no surge topics list for jp yet"},
		{"/v1/topics?region=eu&hour=2026-11-14T09:00:00Z", 200, `"source":"batch","status":"exact","exact":true`},
		{"/v1/topics?region=eu&hour=2026-11-14T08:00:00Z", 404, "no exact surge topics list for eu in the hour"},
		{"/v1/topics?region=eu&hour=2026-11-14T09:30:00Z", 400, "hour"},
		{"/v1/topics?region=eu&hour=2026-11-14T12:00:00Z", 400, "in the future"},
	} {
		t.Run(c.target, func(t *testing.T) {
			w := f.get(c.target)
			if w.Code != c.status || !strings.Contains(w.Body.String(), c.detail) {
				t.Fatalf("%d %s, want %d with %q", w.Code, w.Body, c.status, c.detail)
			}
		})
	}
	t.Run("not configured", func(t *testing.T) {
		nf := newFixture(t, func(c *Config) { c.Topics = nil })
		if w := nf.get("/v1/topics"); w.Code != http.StatusNotFound || !strings.Contains(w.Body.String(), "--topics") {
			t.Fatalf("%d %s", w.Code, w.Body)
		}
	})
	t.Run("config validated", func(t *testing.T) {
		cfg := DefaultConfig()
		cfg.Topics = map[string]string{"e/u": "surge", "world": "hot"}
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), `"e/u"`) || !strings.Contains(err.Error(), `"hot"`) {
			t.Fatalf("Validate = %v", err)
		}
	})
}

func TestTopicsReviewRoute(t *testing.T) {
	f := newFixture(t, nil)
	review := topicrules.NewReview(0)
	review.Hold("#quake", "jp", topicrules.ReasonNewTopic, storetest.T0, 3000, 61)
	decided := 0
	if err := f.srv.Handle(TopicsReviewRoute(review, "s3cret", func() error { decided++; return nil })); err != nil {
		t.Fatal(err)
	}
	post := func(body string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodPost, "/v1/topics/review", strings.NewReader(body))
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		w := httptest.NewRecorder()
		f.h.ServeHTTP(w, r)
		return w
	}
	if w := f.get("/v1/topics/review"); w.Code != http.StatusUnauthorized {
		t.Fatalf("without a token: %d", w.Code)
	}
	if w := post(`{"topic":"#quake","decision":"approve"}`, "Authorization", "Bearer wrong"); w.Code != http.StatusForbidden {
		t.Fatalf("wrong token: %d", w.Code)
	}
	if st, _ := review.Status("#quake"); st != topicrules.Pending {
		t.Fatalf("a refused request decided: %s", st)
	}
	w := f.get("/v1/topics/review", "Authorization", "Bearer s3cret")
	if w.Code != http.StatusOK || !strings.Contains(w.Body.String(), `"#quake"`) {
		t.Fatalf("list: %d %s", w.Code, w.Body)
	}
	if w := post(`{"topic":"#quake","decision":"approve","by":"alice"}`, "Authorization", "Bearer s3cret"); w.Code != http.StatusOK {
		t.Fatalf("approve: %d %s", w.Code, w.Body)
	}
	if st, _ := review.Status("#quake"); st != topicrules.Approved || decided != 1 {
		t.Fatalf("status %s after approval, %d decisions persisted", st, decided)
	}
	if w := f.do(http.MethodDelete, "/v1/topics/review"); w.Code != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE: %d", w.Code)
	}
}

// kafkaState is a KafkaState a test sets.
type kafkaState struct {
	up    atomic.Bool
	since time.Time
}

func (k *kafkaState) Up() bool { return k.up.Load() }
func (k *kafkaState) DownSince() time.Time {
	if k.up.Load() {
		return time.Time{}
	}
	return k.since
}

// TestReadyzKafka: with an ingest's Kafka state reported, /readyz stays 200 while the
// brokers are away and says so (kafka unreachable, since when); without one it says nothing
// of Kafka.
func TestReadyzKafka(t *testing.T) {
	f := newFixture(t, nil)
	if r := decode[ReadyResponse](t, f.get("/readyz")); r.Kafka != "" {
		t.Fatalf("readyz of a server without an ingest speaks of Kafka: %+v", r)
	}
	k := &kafkaState{since: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)}
	k.up.Store(true)
	f.srv.ReportKafka(k)
	if w := f.get("/readyz"); w.Code != 200 || decode[ReadyResponse](t, w).Kafka != KafkaOK || strings.Contains(w.Body.String(), "kafka_down_since") {
		t.Fatalf("readyz with Kafka up: %d %s", w.Code, w.Body)
	}
	k.up.Store(false)
	w := f.get("/readyz")
	if r := decode[ReadyResponse](t, w); w.Code != 200 || r.Kafka != KafkaUnreachable || !r.KafkaDownSince.Equal(k.since) {
		t.Fatalf("readyz with Kafka down: %d %s, want 200, kafka unreachable since %v", w.Code, w.Body, k.since)
	}
}
