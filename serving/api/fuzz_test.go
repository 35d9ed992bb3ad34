package api

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
)

// fuzzSeeds cover every parameter, valid and not.
var fuzzSeeds = []string{
	"", "window=hour", "window=hour&limit=100", "window=day&limit=0", "window=all&limit=7",
	"window=hour&start=2026-11-14T10:00:00Z", "window=hour&start=2026-11-14T09:00:00%2B00:00",
	"window=month&start=2026-10-01T00:00:00Z", "window=hour&start=9999-12-31T23:00:00Z",
	"window=hour&start=0001-01-01T01:00:00Z", "window=hour&start=2026-11-14T10:00:00.000000001Z",
	"window=day&start=2026-11-14T00:00:00-23:59", "window=hour;limit=1", "window=%zz", "limit=%00",
	"window=hour&window=hour", "window=hour&from=x", "from=2026-11-14T00:00:00Z&to=2026-11-15T00:00:00Z&window=day",
	"window=hour&from=0001-01-01T00:00:00Z&to=9999-12-31T23:00:00Z", "window=month&from=2026-01-01T00:00:00Z",
	"window=\xff\xfe", "window=hour&limit=%2B5", "window=hour&limit=  5",
}

// checkNever5xx serves one request and fails on a 5xx or a body that is not JSON.
func checkNever5xx(t *testing.T, h http.Handler, target, rawQuery string) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.URL.Path = target
	r.URL.RawQuery = rawQuery
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code >= 500 {
		t.Fatalf("%s?%q: status %d: %s", target, rawQuery, w.Code, w.Body)
	}
	if w.Code == http.StatusNotModified {
		return
	}
	if !json.Valid(w.Body.Bytes()) {
		t.Fatalf("%s?%q: status %d, body is not JSON: %q", target, rawQuery, w.Code, w.Body)
	}
	if w.Code >= 400 {
		var e ErrorResponse
		if err := json.Unmarshal(w.Body.Bytes(), &e); err != nil || e.Error == "" || e.Detail == "" {
			t.Fatalf("%s?%q: status %d without error and detail: %s", target, rawQuery, w.Code, w.Body)
		}
	}
}

// FuzzTrendingQuery: no raw query string makes GET /v1/trending answer 5xx or anything but
// JSON.
func FuzzTrendingQuery(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	fx := newFixture(f, nil)
	f.Fuzz(func(t *testing.T, q string) { checkNever5xx(t, fx.h, "/v1/trending", q) })
}

// FuzzWindowsQuery is the same for GET /v1/windows.
func FuzzWindowsQuery(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	fx := newFixture(f, nil)
	f.Fuzz(func(t *testing.T, q string) { checkNever5xx(t, fx.h, "/v1/windows", q) })
}

// FuzzTopicsQuery is the same for GET /v1/topics.
func FuzzTopicsQuery(f *testing.F) {
	for _, s := range []string{"", "region=eu", "region=world&score=volume&limit=1", "region=mars", "score=hot", "region=%ff", "region=eu&region=jp", "limit=0"} {
		f.Add(s)
	}
	fx := newFixture(f, nil)
	f.Fuzz(func(t *testing.T, q string) { checkNever5xx(t, fx.h, "/v1/topics", q) })
}
