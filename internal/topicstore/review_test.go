package topicstore

import (
	"trending/model/topicrules"

	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"trending/internal/objstore"
)

// reviewStores returns the object stores the shared-queue tests run against: the embedded
// gofakes3 server always, MinIO when TRENDING_IT_S3 names one (infra/local/services.sh env).
func reviewStores(t *testing.T) map[string]*objstore.Client {
	t.Helper()
	ctx := t.Context()
	out := map[string]*objstore.Client{}
	emb, err := objstore.StartEmbedded(ctx, t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { emb.Close() })
	add := func(name, endpoint, bucket, access, secret string) {
		cfg := objstore.DefaultConfig()
		cfg.Endpoint, cfg.Bucket, cfg.AccessKey, cfg.SecretKey = endpoint, bucket, access, secret
		st, err := objstore.New(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := st.EnsureBucket(ctx); err != nil {
			t.Fatal(err)
		}
		out[name] = st
	}
	add("embedded", emb.Endpoint, "trending", "k", "s")
	if ep := os.Getenv("TRENDING_IT_S3"); ep != "" {
		add("minio", ep, "trending-it-review", os.Getenv("TRENDING_IT_S3_ACCESS_KEY"), os.Getenv("TRENDING_IT_S3_SECRET_KEY"))
	} else {
		t.Log("TRENDING_IT_S3 not set: MinIO not tested (infra/local/services.sh env)")
	}
	return out
}

func TestSharedReview(t *testing.T) {
	t0 := time.Now().UTC().Add(-time.Hour)
	for name, st := range reviewStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			key := fmt.Sprintf("test/%s/%d/review.json", t.Name(), time.Now().UnixNano())
			a, b, cli := topicrules.NewReview(0), topicrules.NewReview(0), topicrules.NewReview(0)
			sync := func(rs ...*topicrules.Review) {
				t.Helper()
				for _, r := range rs {
					if err := SyncReview(ctx, st, key, r); err != nil {
						t.Fatal(err)
					}
				}
			}

			// Worker A holds a never-seen topic; B has not seen it.
			a.Hold("quake", "jp", topicrules.ReasonNewTopic, t0, 3000, 12)
			b.Hold("marathon", "us", topicrules.ReasonNewAccounts, t0, 400, 2)
			sync(a, b)
			sync(cli)
			if got := cli.List(topicrules.Pending); len(got) != 2 || got[0].Topic != "marathon" && got[1].Topic != "marathon" {
				t.Fatalf("CLI lists %+v, want quake and marathon pending", got)
			}
			if !b.Blocks("quake") {
				t.Fatal("worker B does not hold quake after a sync: B would list it")
			}

			// The operator approves it on the CLI side; A sees the topic again meanwhile.
			if err := cli.Approve("quake", "alice", t0.Add(time.Minute)); err != nil {
				t.Fatal(err)
			}
			sync(cli)
			a.Hold("quake", "jp", topicrules.ReasonNewTopic, t0.Add(2*time.Minute), 3500, 13)
			sync(a, b) // one tick
			for wn, w := range map[string]*topicrules.Review{"A": a, "B": b} {
				if s, _ := w.Status("quake"); s != topicrules.Approved || w.Blocks("quake") {
					t.Fatalf("worker %s: quake %s after a tick, want approved", wn, s)
				}
			}
			// A's later sighting survived the merge alongside the decision.
			if h := a.List(topicrules.Approved); len(h) != 1 || h[0].Mentions != 3500 || h[0].By != "alice" {
				t.Fatalf("A's quake entry %+v", h)
			}

			// A stale queue (a restored checkpoint) syncing pending cannot undo the approval.
			stale := topicrules.NewReview(0)
			stale.Hold("quake", "de", topicrules.ReasonNewTopic, t0, 10, 1)
			sync(stale, b)
			if s, _ := b.Status("quake"); s != topicrules.Approved {
				t.Fatalf("a stale pending queue undid the approval: %s", s)
			}
			if h := b.List(topicrules.Approved); len(h) != 1 || len(h[0].Regions) != 2 {
				t.Fatalf("quake's lists did not merge: %+v", h)
			}

			// A decision past its TTL leaves the shared queue, and a replica that still has
			// it cannot bring it back.
			old := topicrules.NewReview(0)
			old.Hold("gone", "us", topicrules.ReasonNewTopic, t0.Add(-10*24*time.Hour), 1, 1)
			if err := old.Reject("gone", "carol", t0.Add(-9*24*time.Hour)); err != nil {
				t.Fatal(err)
			}
			sync(old, cli)
			if _, ok := cli.Status("gone"); ok {
				t.Fatal("an expired decision was kept in the shared queue")
			}
			if _, ok := cli.Status("quake"); !ok {
				t.Fatal("pruning dropped a live decision")
			}
		})
	}
}

// TestSharedReviewConcurrentHolds: workers syncing at the same time keep every hold (the
// conditional write makes the loser merge and retry).
func TestSharedReviewConcurrentHolds(t *testing.T) {
	t0 := time.Now().UTC()
	for name, st := range reviewStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			key := fmt.Sprintf("test/%s/%d/review.json", t.Name(), time.Now().UnixNano())
			const workers, each = 4, 3
			var wg sync.WaitGroup
			errs := make(chan error, workers)
			for w := range workers {
				wg.Go(func() {
					r := topicrules.NewReview(0)
					for i := range each {
						r.Hold(fmt.Sprintf("t%d-%d", w, i), "world", topicrules.ReasonNewTopic, t0, 1, 1)
						if err := SyncReview(ctx, st, key, r); err != nil {
							errs <- err
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatal(err)
			}
			cli := topicrules.NewReview(0)
			if err := SyncReview(ctx, st, key, cli); err != nil {
				t.Fatal(err)
			}
			if got := len(cli.List(topicrules.Pending)); got != workers*each {
				t.Fatalf("shared queue holds %d topics, want %d: a concurrent hold was lost", got, workers*each)
			}
		})
	}
}

// holds operators' decisions).
func TestSharedReviewCorrupt(t *testing.T) {
	st := reviewStores(t)["embedded"]
	ctx := t.Context()
	if _, err := st.Put(ctx, ReviewKey, []byte(`{"version":1,"max":`)); err != nil {
		t.Fatal(err)
	}
	r := topicrules.NewReview(0)
	r.Hold("quake", "jp", topicrules.ReasonNewTopic, time.Now(), 1, 1)
	if err := SyncReview(ctx, st, ReviewKey, r); !errors.Is(err, topicrules.ErrCorrupt) {
		t.Fatalf("sync over a corrupt object: %v, want topicrules.ErrCorrupt", err)
	}
	if b, _ := st.Get(ctx, ReviewKey); string(b) != `{"version":1,"max":` {
		t.Fatalf("the corrupt object was replaced: %q", b)
	}
}

// TestLoadReview: a read-only copy of the shared queue: empty while there is no object, what
// the syncing replicas wrote once there is, never a write, and a corrupt object an error.
func TestLoadReview(t *testing.T) {
	st := reviewStores(t)["embedded"]
	ctx := t.Context()
	key := "test/load/review.json"
	r, err := LoadReview(ctx, st, key)
	if err != nil || r.Blocks("quake") || len(r.List("")) != 0 {
		t.Fatalf("no object: %v, %v; want an empty queue", r, err)
	}
	if _, err := st.Get(ctx, key); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("LoadReview wrote the object: %v", err)
	}
	w := topicrules.NewReview(0)
	w.Hold("quake", "jp", topicrules.ReasonNewTopic, time.Now(), 3000, 12)
	if err := SyncReview(ctx, st, key, w); err != nil {
		t.Fatal(err)
	}
	if r, err = LoadReview(ctx, st, key); err != nil || !r.Blocks("quake") {
		t.Fatalf("held in the queue: blocks %v, %v", r.Blocks("quake"), err)
	}
	if _, err := st.Put(ctx, key, []byte(`{"version":1,"max":`)); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadReview(ctx, st, key); !errors.Is(err, topicrules.ErrCorrupt) {
		t.Fatalf("corrupt object: %v, want topicrules.ErrCorrupt", err)
	}
}
