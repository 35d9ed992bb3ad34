package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trending/model"
	"trending/serving/store"
	boltstore "trending/serving/store/bolt"
	"trending/serving/store/storetest"
)

// testNow is the clock of every test server: half past the hour storetest.T0.
var testNow = storetest.T0.Add(30 * time.Minute)

// fixture is a server over a bolt store holding a typical set of lists.
type fixture struct {
	t     testing.TB
	srv   *Server
	st    *flakyStore
	h     http.Handler
	reg   *prometheus.Registry
	clock atomic.Pointer[time.Time]
}

// seedLists are the fixture's lists: the four live ones and a few calendar windows, exact and
// approximate.
func seedLists() []model.List {
	t0 := storetest.T0
	hourLive := storetest.MakeList("hour", time.Time{}, 30, model.SourceSpeed, 120, 0)
	for i := range hourLive.Items {
		hourLive.Items[i].Views = uint64(10000 - 50*i)
		hourLive.Items[i].Title = fmt.Sprintf("Video \"%d\" <é>", i)
		if i%2 == 0 { // half the items have a thumbnail, half not
			hourLive.Items[i].Thumbnail = fmt.Sprintf("https://img.example/v%d.jpg?s=160&t=<%d>", i, i)
		}
	}
	hourLive.Incomplete, hourLive.StalePartitions = true, []int{3, 7}
	hourLive.WindowStart, hourLive.WindowEnd = hourLive.AsOf.Add(-time.Hour), hourLive.AsOf // the last 60 minutes, open minute included
	batch := storetest.MakeList("hour", t0.Add(-time.Hour), 100, model.SourceBatch, 10, 500)
	batch.Reconciliation = &model.Reconciliation{SpeedVersion: 29, RecallAtK: 0.9, MaxAbsError: 12, MeanAbsError: 3.5, MaxRelError: 0.02, SpeedDroppedLate: 4}
	batch.Fingerprint = "sha256:abc"
	topicsEU := model.List{Window: model.TopicsList, Group: "eu", Score: "surge", AsOf: t0.Add(29 * time.Minute), Version: 31, Source: model.SourceSpeed, Status: model.StatusLive,
		ComputedAt: t0.Add(29 * time.Minute), Incomplete: true, StalePartitions: []int{2}, ErrorBound: &model.Bound{MaxOvercount: 20.2, Probability: 0.993},
		Baseline: &model.Baseline{Days: 5, Wanted: 7, Unavailable: 2, MaxOvercount: 20.1},
		Items: []model.Item{
			{Rank: 1, ItemID: "#quake", Views: 3000, Topic: &model.Topic{Score: 61, NoHistory: true}},
			{Rank: 2, ItemID: "#marathon", Views: 3700, Topic: &model.Topic{Score: 15.1, Expected: 198, NewShare: 0.02}},
			{Rank: 3, ItemID: "#giveaway", Views: 900, Topic: &model.Topic{Score: 0.51, Expected: 100, NewShare: 0.9, Review: true}},
		}}
	topicsEUHour := model.List{Window: model.TopicsList, Group: "eu", Score: "surge", Start: t0.Add(-time.Hour), End: t0, AsOf: t0, Version: 100,
		Source: model.SourceBatch, Status: model.StatusExact, Exact: true, ComputedAt: t0.Add(5 * time.Minute), Fingerprint: "sha256:def",
		Items: []model.Item{{Rank: 1, ItemID: "#marathon", Views: 3650, Exact: true, Topic: &model.Topic{Score: 14.9, Expected: 198}}}}
	topicsEUHour.Reconciliation = &model.Reconciliation{SpeedVersion: 30, RecallAtK: 1, MaxAbsError: 5, MeanAbsError: 5, MaxRelError: 0.002,
		SpeedErrorBound: &model.Bound{MaxOvercount: 20, Probability: 0.993}}
	month := storetest.MakeList("month", model.Month.Align(t0).AddDate(0, -1, 0), 40, model.SourceBatch, 20, 1e6)
	month.Reconciliation = &model.Reconciliation{SpeedVersion: 35, RecallAtK: 0.95, MaxAbsError: 300, MeanAbsError: 40, MaxRelError: 0.01,
		SpeedErrorBound: &model.Bound{MaxOvercount: 250, Probability: 0.993}}
	// A closed hour the batch has not recomputed: the speed layer's provisional list, with
	// the events that came too late for it.
	provisional := storetest.MakeList("hour", t0.Add(-3*time.Hour), 10, model.SourceSpeed, 5, 50)
	provisional.DroppedLate = 3
	all := storetest.MakeList("all", time.Time{}, 30, model.SourceSpeed, 100, 900000)
	all.Boundary, all.Cutoff = model.Day.Align(t0), 899000
	topicsWorld := topicsEU
	topicsWorld.Group, topicsWorld.Score, topicsWorld.Items = "world", "volume", []model.Item{{Rank: 1, ItemID: "#marathon", Views: 5200, Topic: &model.Topic{Score: 5200, Expected: 1000}}}
	return []model.List{
		hourLive,
		storetest.MakeList("day", time.Time{}, 30, model.SourceSpeed, 100, 9000),
		storetest.MakeList("month", time.Time{}, 30, model.SourceSpeed, 100, 80000),
		all,
		storetest.MakeList("hour", t0, 30, model.SourceSpeed, 20, 300),
		batch,
		provisional,
		storetest.MakeList("day", model.Day.Align(t0), 30, model.SourceSpeed, 20, 7000),
		month,
		topicsEU, topicsWorld, topicsEUHour,
	}
}

func newFixture(t testing.TB, mod func(*Config)) *fixture {
	t.Helper()
	f := &fixture{t: t, reg: prometheus.NewRegistry()}
	now := testNow
	f.clock.Store(&now)
	b, err := boltstore.Open(filepath.Join(t.TempDir(), "serving.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	f.st = &flakyStore{Store: b}
	for _, l := range seedLists() {
		if err := b.Put(context.Background(), l); err != nil {
			t.Fatalf("seed %s: %v", l.Key(), err)
		}
	}
	cfg := DefaultConfig()
	cfg.Now = func() time.Time { return *f.clock.Load() }
	cfg.Registerer, cfg.Gatherer = f.reg, f.reg
	cfg.Topics = map[string]string{"world": "volume", "eu": "surge", "jp": "surge"}
	if mod != nil {
		mod(&cfg)
	}
	f.srv, err = New(cfg, f.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Cache().Refresh(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	f.h = f.srv.Handler()
	return f
}

func (f *fixture) now() time.Time { return *f.clock.Load() }

func (f *fixture) advance(d time.Duration) {
	now := f.clock.Load().Add(d)
	f.clock.Store(&now)
}

// do serves one request in process.
func (f *fixture) do(method, target string, hdr ...string) *httptest.ResponseRecorder {
	f.t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	w := httptest.NewRecorder()
	f.h.ServeHTTP(w, r)
	return w
}

func (f *fixture) get(target string, hdr ...string) *httptest.ResponseRecorder {
	f.t.Helper()
	return f.do(http.MethodGet, target, hdr...)
}

func decode[T any](t testing.TB, w *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	body, _ := io.ReadAll(w.Result().Body)
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decode %T from %q: %v", v, body, err)
	}
	return v
}

// flakyStore fails every call while down is set, as an unreachable ClickHouse would.
type flakyStore struct {
	store.Store
	down  atomic.Bool
	calls atomic.Int64
}

var errDown = errors.New("dial tcp 127.0.0.1:9000: connection refused")

func (s *flakyStore) Get(ctx context.Context, k model.Key) (model.List, error) {
	s.calls.Add(1)
	if s.down.Load() {
		return model.List{}, errDown
	}
	return s.Store.Get(ctx, k)
}

func (s *flakyStore) Range(ctx context.Context, w string, from, to time.Time) ([]model.List, error) {
	s.calls.Add(1)
	if s.down.Load() {
		return nil, errDown
	}
	return s.Store.Range(ctx, w, from, to)
}

func (s *flakyStore) Since(ctx context.Context, since time.Time) ([]model.List, error) {
	s.calls.Add(1)
	if s.down.Load() {
		return nil, errDown
	}
	return s.Store.Since(ctx, since)
}
