package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trending/model"
	"trending/model/event"
	"trending/model/topicrules"
	"trending/model/windowset"
	"trending/serving/api"
	"trending/speed/topics"
	"trending/speed/window"
	"trending/speed/worker"
)

// topicsConfig is a small trending-topics setup: eu and jp lists scored by surge, the worldwide one
// by volume, with the default floor (300), smoothing (50) and dedupe.
func topicsConfig() *topics.Config {
	c := topics.DefaultConfig()
	c.Regions = []string{"eu", "jp"}
	c.Scores = map[string]topicrules.Score{"eu": topicrules.Surge, "jp": topicrules.Surge}
	c.Width, c.BaselineWidth = 1<<12, 1<<10
	c.Dedupe.Capacity = 1 << 14
	return &c
}

// mentions returns n mentions of topic in region at ts, by users prefix-0.. (age days old;
// -1 for no age).
func mentions(topic, region, prefix string, n int, age int32, ts time.Time) []event.Event {
	evs := make([]event.Event, n)
	for i := range evs {
		evs[i] = event.Event{ItemID: topic, Count: 1, TS: ts.Add(time.Duration(i) * time.Millisecond), Region: region,
			UserID: fmt.Sprintf("%s-%d", prefix, i)}
		if age >= 0 {
			evs[i].AccountAgeDays, evs[i].HasAccountAge = age, true
		}
	}
	return evs
}

// topicItem polls the served list for topic until check accepts it.
func (e *env) topicItem(t *testing.T, window, topic string, within time.Duration, check func(model.Item, bool) bool) model.Item {
	t.Helper()
	deadline := time.Now().Add(within)
	var last string
	for time.Now().Before(deadline) {
		l, err := e.st.Get(context.Background(), model.Key{Window: window})
		if err == nil {
			for _, it := range l.Items {
				if it.ItemID == topic && check(it, true) {
					return it
				}
			}
			if check(model.Item{}, false) {
				return model.Item{}
			}
			last = fmt.Sprintf("version %d items %+v", l.Version, l.Items)
		} else {
			last = err.Error()
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: %s never as wanted; last: %s", window, topic, last)
	return model.Item{}
}

// TestTopicsEmbedded runs trending topics end to end through the embedded broker: mentions with
// regions, users and account ages in; a regional surge list and the worldwide volume list
// out of the serving store and GET /v1/topics; a user who posts 200 times counted once, a
// new account 3 tenths; a never-seen topic held until approved; and all of it (counts,
// dedupe, the approval) surviving a restart through the checkpoint.
func TestTopicsEmbedded(t *testing.T) {
	brokers, obj := embedded(t)
	e := newEnv(t, brokers, obj, 2)
	e.startMerger(t)
	review := topicrules.NewReview(0)
	withTopics := func(c *worker.Config) {
		c.TrendingTopics, c.Review, c.Blocklist = topicsConfig(), review, topicrules.NewBlocklist("spam")
	}
	stop := e.startWorker(t, withTopics)

	now := time.Now().UTC().Add(-2 * time.Minute).Truncate(time.Minute)
	if now.Minute() == 59 {
		// The restart below adds mentions a minute later: keep them in the same clock hour,
		// whose baseline (yesterday's) is the one set up here.
		now = now.Add(-time.Minute)
	}
	var evs []event.Event
	// Yesterday, same clock hour: #marathon's baseline, 200 mentions (expected 200/4 = 50).
	evs = append(evs, mentions("#marathon", "eu", "y", 200, -1, now.Add(-24*time.Hour))...)
	// Now: 400 established users, 100 new accounts (3 days old: 3 tenths each), and one
	// user posting 200 times: 400 + 30 + 1 = 431 mentions; surge (431+50)/(50+50) = 4.81.
	evs = append(evs, mentions("#marathon", "eu", "u", 400, 900, now)...)
	evs = append(evs, mentions("#marathon", "eu", "new", 100, 3, now)...)
	for i := range 200 {
		evs = append(evs, event.Event{ItemID: "#marathon", Count: 1, TS: now.Add(time.Duration(i) * time.Millisecond), Region: "eu", UserID: "dup"})
	}
	// A never-seen topic in jp over the floor: held for review.
	evs = append(evs, mentions("#quake", "jp", "q", 350, -1, now)...)
	// A banned term, dropped on arrival.
	evs = append(evs, mentions("#cheap-spam", "eu", "s", 500, -1, now)...)
	e.produce(t, evs)

	marathon := func(want float64) func(model.Item, bool) bool {
		return func(it model.Item, found bool) bool { return found && math.Abs(float64(it.Views)-want) <= 1 }
	}
	it := e.topicItem(t, "topics/eu/surge", "#marathon", 60*time.Second, marathon(431))
	if it.Rank != 1 || it.Expected != 50 || math.Abs(it.Score-481.0/100) > 0.05 || math.Abs(it.NewShare-30.0/431) > 0.01 || it.NoHistory {
		t.Fatalf("eu #marathon: %+v, want 431 mentions, expected 50, surge 4.81, new share 0.07", it)
	}
	e.topicItem(t, "topics/world/volume", "#marathon", 30*time.Second, marathon(431))
	if st, ok := review.Status("#quake"); !ok || st != topicrules.Pending {
		t.Fatalf("#quake: %q %v, want pending review", st, ok)
	}
	for _, w := range []string{"topics/jp/surge", "topics/world/volume", "topics/eu/surge"} {
		l, _ := e.st.Get(context.Background(), model.Key{Window: w})
		for _, it := range l.Items {
			if it.ItemID == "#quake" || it.ItemID == "#cheap-spam" {
				t.Fatalf("%s lists %s: %+v", w, it.ItemID, l.Items)
			}
		}
	}

	// Approve #quake over the review endpoint; it is listed in jp (no baseline: surge
	// (350+50)/50 = 8) and worldwide.
	rr := httptest.NewRecorder()
	api.TopicsReviewRoute(review, "", nil).Handler.ServeHTTP(rr, httptest.NewRequest(http.MethodPost, "/v1/topics/review",
		bytes.NewReader([]byte(`{"topic":"#quake","decision":"approve","by":"test"}`))))
	if rr.Code != http.StatusOK {
		t.Fatalf("approve: %d %s", rr.Code, rr.Body)
	}
	q := e.topicItem(t, "topics/jp/surge", "#quake", 30*time.Second, func(it model.Item, found bool) bool { return found })
	if math.Abs(float64(q.Views)-350) > 1 || math.Abs(q.Score-8) > 0.05 || !q.NoHistory {
		t.Fatalf("jp #quake: %+v, want 350 mentions, surge 8, no history", q)
	}

	// Restart: the checkpoint carries the counts, the dedupe table and the approval. Ten new
	// users and the duplicate user again make 441, not 442 (and not 11 from scratch).
	stop(false)
	stop = e.startWorker(t, withTopics)
	defer stop(false)
	more := mentions("#marathon", "eu", "late", 10, -1, now.Add(time.Minute))
	more = append(more, event.Event{ItemID: "#marathon", Count: 1, TS: now.Add(time.Minute), Region: "eu", UserID: "dup"})
	e.produce(t, more)
	e.topicItem(t, "topics/eu/surge", "#marathon", 60*time.Second, marathon(441))
	e.topicItem(t, "topics/jp/surge", "#quake", 30*time.Second, func(it model.Item, found bool) bool { return found })

	// The API serves the regional list from the store; an unknown region is a 400.
	cfg := api.DefaultConfig()
	cfg.Topics = map[string]string{"world": "volume", "eu": "surge", "jp": "surge"}
	srv, err := api.New(cfg, e.st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Cache().Refresh(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	rr = httptest.NewRecorder()
	srv.Handler().ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/v1/topics?region=eu", nil))
	var resp api.ListResponse
	if err := json.Unmarshal(rr.Body.Bytes(), &resp); err != nil || rr.Code != http.StatusOK {
		t.Fatalf("GET /v1/topics?region=eu: %d %s (%v)", rr.Code, rr.Body, err)
	}
	if resp.Window != "topics/eu/surge" || len(resp.Items) == 0 || resp.Items[0].ItemID != "#marathon" || resp.Items[0].Expected != 50 || resp.ErrorBound == nil {
		t.Fatalf("GET /v1/topics?region=eu: %s", rr.Body)
	}
	rr = httptest.NewRecorder()
	srv.Handler().ServeHTTP(rr, httptest.NewRequest(http.MethodGet, "/v1/topics?region=us", nil))
	if rr.Code != http.StatusBadRequest {
		t.Fatalf("unknown region: %d %s", rr.Code, rr.Body)
	}
}

// TestTopicsNotRestoredFromAnUnusableCheckpoint: a worker whose windows changed cannot restore
// the window state of its checkpoints and replays the log from the start; the topics state
// must then start empty too, not from the unusable checkpoint, or the replay counts every
// mention twice. (Before the fix the topics part of the last checkpoint tried was restored.)
func TestTopicsNotRestoredFromAnUnusableCheckpoint(t *testing.T) {
	brokers, obj := embedded(t)
	e := newEnv(t, brokers, obj, 1)
	e.startMerger(t)
	withTopics := func(c *worker.Config) { c.TrendingTopics = topicsConfig() }
	stop := e.startWorker(t, withTopics)
	now := time.Now().UTC().Add(-2 * time.Minute).Truncate(time.Minute)
	// Yesterday's same hour gives #x a baseline (a never-seen topic is held for review).
	evs := mentions("#x", "eu", "y", 200, -1, now.Add(-24*time.Hour))
	for i := range 300 {
		evs = append(evs, event.Event{ItemID: "#x", Count: 1, TS: now.Add(time.Duration(i) * time.Millisecond), Region: "eu"})
	}
	e.produce(t, evs)
	is := func(want float64) func(model.Item, bool) bool {
		return func(it model.Item, found bool) bool { return found && math.Abs(float64(it.Views)-want) <= 1 }
	}
	e.topicItem(t, "topics/world/volume", "#x", 60*time.Second, is(300))
	stop(false) // checkpoints the window and topics states at the log's end

	reg := prometheus.NewRegistry()
	stop = e.startWorker(t, withTopics, func(c *worker.Config) {
		c.Registry = reg
		c.Window.Windows = append(c.Window.Windows, window.WindowConfig{Name: "day", Kind: windowset.Sliding, Length: 24 * time.Hour, Bucket: time.Hour, Mode: windowset.Exact})
	})
	defer stop(false)
	for deadline := time.Now().Add(30 * time.Second); counterValue(t, reg, "trending_speed_events_total") < 500; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the worker with other windows never replayed the log")
		}
	}
	if n := counterValue(t, reg, "trending_speed_restores_total"); n != 0 {
		t.Fatalf("%v restores: the checkpoints' window state should not fit the new windows", n)
	}
	time.Sleep(time.Second) // a few publishes and merges
	e.topicItem(t, "topics/world/volume", "#x", 10*time.Second, is(300))
}
