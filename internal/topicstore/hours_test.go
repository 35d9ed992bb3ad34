package topicstore

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"trending/internal/objstore"
)

// TestHours: write, rewrite, read and prune a partition's hourly sketches, on the embedded
// store and (TRENDING_IT_S3) on MinIO.
func TestHours(t *testing.T) {
	for name, st := range reviewStores(t) {
		t.Run(name, func(t *testing.T) {
			ctx := t.Context()
			hs := NewHours(st, fmt.Sprintf("test/%s/%d/hours", t.Name(), time.Now().UnixNano()))
			h0 := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC).Unix() / 3600
			if k := hs.Key("views", 3, h0); !bytes.HasSuffix([]byte(k), []byte("/views/3/2026-12-01T11Z.cms")) {
				t.Errorf("key %s", k)
			}
			for d := range 9 {
				if err := hs.Put(ctx, "views", 3, h0-int64(d)*24, []byte(fmt.Sprint("day", d))); err != nil {
					t.Fatal(err)
				}
			}
			if err := hs.Put(ctx, "views", 4, h0-8*24, []byte("other partition")); err != nil {
				t.Fatal(err)
			}
			// A rewrite replaces: still one object for the hour.
			if err := hs.Put(ctx, "views", 3, h0, []byte("day0")); err != nil {
				t.Fatal(err)
			}
			objs, err := st.List(ctx, hs.dir("views", 3))
			if err != nil || len(objs) != 9 {
				t.Fatalf("%d objects (%v), want 9 after a rewrite", len(objs), err)
			}
			if b, err := hs.Get(ctx, "views", 3, h0-24); err != nil || string(b) != "day1" {
				t.Errorf("get day 1: %q %v", b, err)
			}
			if b, err := hs.Get(ctx, "views", 3, h0+1); err != nil || b != nil {
				t.Errorf("get a missing hour: %q %v, want nil, nil", b, err)
			}
			n, err := hs.Prune(ctx, "views", 3, h0-7*24)
			if err != nil || n != 1 {
				t.Fatalf("pruned %d (%v), want day 8, the one before the 7 a baseline reads", n, err)
			}
			if b, _ := hs.Get(ctx, "views", 3, h0-8*24); b != nil {
				t.Error("day 8 survived the prune")
			}
			if b, _ := hs.Get(ctx, "views", 3, h0-7*24); string(b) != "day7" {
				t.Errorf("day 7: %q, want kept", b)
			}
			if b, _ := hs.Get(ctx, "views", 4, h0-8*24); b == nil {
				t.Error("another partition's hour was pruned")
			}
		})
	}
}

// TestHoursUnreachable: a store that does not answer is an error, never "no such hour" (which
// would silently shrink the baseline instead of saying it is degraded).
func TestHoursUnreachable(t *testing.T) {
	cfg := objstore.DefaultConfig()
	cfg.Endpoint, cfg.Bucket, cfg.AccessKey, cfg.SecretKey, cfg.Timeout = "http://127.0.0.1:1", "trending", "k", "s", 2*time.Second
	st, err := objstore.New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := NewHours(st, "")
	if b, err := hs.Get(t.Context(), "views", 0, 1); err == nil || b != nil {
		t.Errorf("get from an unreachable store: %q %v, want an error", b, err)
	}
	if err := hs.Put(t.Context(), "views", 0, 1, []byte("x")); err == nil {
		t.Error("put to an unreachable store succeeded")
	}
}
