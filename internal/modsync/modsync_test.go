package modsync

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"trending/internal/objstore"
	"trending/model/moderation"
)

// stores returns the object stores the tests run against: the embedded gofakes3 server
// always, MinIO when TRENDING_IT_S3 names one (infra/local/services.sh env).
func stores(t *testing.T) map[string]*objstore.Client {
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
		add("minio", ep, "trending-it-moderation", os.Getenv("TRENDING_IT_S3_ACCESS_KEY"), os.Getenv("TRENDING_IT_S3_SECRET_KEY"))
	} else {
		t.Log("TRENDING_IT_S3 not set: MinIO not tested (infra/local/services.sh env)")
	}
	return out
}

// TestUpdateConcurrent: writers removing different items at once all land (the conditional
// write never loses one), a watcher sees the set, and a restore brings an item back.
func TestUpdateConcurrent(t *testing.T) {
	for name, st := range stores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			key := fmt.Sprintf("test/%d/removed.json", time.Now().UnixNano())
			if l, err := Load(ctx, st, key); err != nil || l.Removed().Len() != 0 {
				t.Fatalf("no object: %v, %v; want an empty list", l, err)
			}
			var wg sync.WaitGroup
			errs := make(chan error, 6)
			for i := range 6 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_, err := Update(ctx, st, key, func(l *moderation.List) error {
						return l.Remove(fmt.Sprintf("V%d", i), "spam", "op", time.Now())
					})
					errs <- err
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			w, err := NewWatcher(st, key, time.Hour, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			changed := make(chan *moderation.Set, 4)
			w.OnChange(func(s *moderation.Set) { changed <- s })
			if err := w.Refresh(ctx); err != nil {
				t.Fatal(err)
			}
			if got := w.Removed().Items(); len(got) != 6 {
				t.Fatalf("removed %v, want V0..V5", got)
			}
			<-changed
			_, err = Update(ctx, st, key, func(l *moderation.List) error { return l.Restore("V3", "appeal", "op2", time.Now()) })
			if err != nil {
				t.Fatal(err)
			}
			_, err = Update(ctx, st, key, func(l *moderation.List) error { return l.Restore("V3", "again", "op2", time.Now()) })
			if !errors.Is(err, moderation.ErrNotRemoved) {
				t.Fatalf("second restore: %v, want ErrNotRemoved", err)
			}
			w.Refresh(ctx)
			if s := <-changed; s.Has("V3") || s.Len() != 5 {
				t.Fatalf("after restore: %v", s.Items())
			}
			if err := w.Refresh(ctx); err != nil || len(changed) != 0 {
				t.Fatalf("an unchanged read called OnChange (%d) or failed: %v", len(changed), err)
			}
		})
	}
}

// TestCorruptLeftAlone: a corrupt object is an error for readers and writers, and stays.
func TestCorruptLeftAlone(t *testing.T) {
	st := stores(t)["embedded"]
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	key := "test/corrupt.json"
	if _, err := st.Put(ctx, key, []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(ctx, st, key); !errors.Is(err, moderation.ErrCorrupt) {
		t.Fatalf("Load: %v, want ErrCorrupt", err)
	}
	if _, err := Update(ctx, st, key, func(l *moderation.List) error { return l.Remove("V1", "x", "y", time.Now()) }); !errors.Is(err, moderation.ErrCorrupt) {
		t.Fatalf("Update: %v, want ErrCorrupt", err)
	}
	if b, _ := st.Get(ctx, key); string(b) != "{not json" {
		t.Fatalf("the corrupt object was replaced: %q", b)
	}
}
