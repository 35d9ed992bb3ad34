package api

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"trending/model/moderation"
)

// memModeration is a ModerationStore in memory (internal/modsync's is tested against S3).
type memModeration struct {
	mu sync.Mutex
	l  *moderation.List
}

func (m *memModeration) Load(context.Context) (*moderation.List, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := moderation.NewList()
	out.Merge(m.l)
	return out, nil
}

func (m *memModeration) Update(_ context.Context, change func(*moderation.List) error) (*moderation.List, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := moderation.NewList()
	next.Merge(m.l)
	if err := change(next); err != nil {
		return nil, err
	}
	m.l = next
	return next, nil
}

func TestModerationRoute(t *testing.T) {
	var applied atomic.Pointer[moderation.Set]
	h := ModerationRoute(&memModeration{l: moderation.NewList()}, "s3cret", func(s *moderation.Set) { applied.Store(s) }).Handler
	do := func(method, target, body string, auth bool) *httptest.ResponseRecorder {
		t.Helper()
		r := httptest.NewRequest(method, target, strings.NewReader(body))
		if auth {
			r.Header.Set("Authorization", "Bearer s3cret")
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for _, c := range []struct {
		method, target, body string
		auth                 bool
		status               int
		has                  string
	}{
		{"GET", "/v1/moderation", "", false, 401, "unauthorized"},
		{"POST", "/v1/moderation", `{"item":"V7","action":"remove","reason":"spam","by":"alice"}`, false, 401, ""},
		{"POST", "/v1/moderation", `{"item":"V7","action":"remove","reason":"spam","by":"alice"}`, true, 200, `"removed":true`},
		{"POST", "/v1/moderation", `{"item":"V8","action":"remove","reason":"","by":"alice"}`, true, 400, "reason must not be empty"},
		{"POST", "/v1/moderation", `{"item":"V8","action":"hide","reason":"x","by":"alice"}`, true, 400, "action must be"},
		{"POST", "/v1/moderation", `{"item":"V8","action":"remove","reason":"x","by":"alice","extra":1}`, true, 400, "bad_request"},
		{"GET", "/v1/moderation", "", true, 200, `"item":"V7"`},
		{"POST", "/v1/moderation", `{"item":"V7","action":"restore","reason":"appeal","by":"bob"}`, true, 200, `"removed":false`},
		{"POST", "/v1/moderation", `{"item":"V7","action":"restore","reason":"appeal","by":"bob"}`, true, 404, "not_removed"},
		{"GET", "/v1/moderation", "", true, 200, `"removed":0,"decisions":[]`},
		{"GET", "/v1/moderation?status=restored", "", true, 200, `"by":"bob"`},
		{"GET", "/v1/moderation?status=x", "", true, 400, "status must be"},
		{"DELETE", "/v1/moderation", "", true, 405, ""},
	} {
		w := do(c.method, c.target, c.body, c.auth)
		if w.Code != c.status || !strings.Contains(w.Body.String(), c.has) {
			t.Fatalf("%s %s %s: %d %s, want %d with %q", c.method, c.target, c.body, w.Code, w.Body, c.status, c.has)
		}
	}
	if s := applied.Load(); s == nil || s.Len() != 0 {
		t.Fatalf("applied set after the restore: %v", s.Items())
	}
}

// TestCacheDropsRemoved: the API's cache drops removed items from every list it serves at
// the refresh after a change (the net under the writers, for lists written before it), the
// others ranked again, and a restore brings an item back in the lists that hold it.
func TestCacheDropsRemoved(t *testing.T) {
	var removed atomic.Pointer[moderation.Set]
	f := newFixture(t, func(c *Config) { c.Removed = removed.Load })
	type list struct {
		Items []struct {
			Rank   int    `json:"rank"`
			ItemID string `json:"item_id"`
		} `json:"items"`
	}
	ids := func() []string {
		t.Helper()
		w := f.get("/v1/trending?window=hour&limit=5")
		if w.Code != http.StatusOK {
			t.Fatalf("GET: %d %s", w.Code, w.Body)
		}
		var out []string
		for i, it := range decode[list](t, w).Items {
			if it.Rank != i+1 {
				t.Fatalf("rank %d at %d", it.Rank, i)
			}
			out = append(out, it.ItemID)
		}
		return out
	}
	before := ids()
	removed.Store(moderation.NewSet(before[0], before[2]))
	if err := f.srv.Cache().Refresh(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	got := ids()
	if want := []string{before[1], before[3], before[4]}; len(got) < 3 || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("after removing %s and %s: %v, want %v first", before[0], before[2], got, want)
	}
	removed.Store(moderation.NewSet())
	if err := f.srv.Cache().Refresh(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if got := ids(); strings.Join(got, ",") != strings.Join(before, ",") {
		t.Fatalf("after the restore: %v, want %v", got, before)
	}
}
