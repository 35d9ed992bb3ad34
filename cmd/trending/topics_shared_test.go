package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"trending/internal/topicstore"

	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/model/topicrules"
)

// TestTopicsReviewShared: two speed workers' queues and `trending topics review` over the
// shared queue object. A topic held by worker A is listed by the CLI and approved there; the
// approval reaches A and B at their next sync (one publish tick).
func TestTopicsReviewShared(t *testing.T) {
	onEveryBucket(t, "review", func(t *testing.T, obj *objstore.Client, s3 []string) {
		ctx := t.Context()
		a, b := topicrules.NewReview(0), topicrules.NewReview(0)
		tick := func() {
			t.Helper()
			for _, r := range []*topicrules.Review{a, b} {
				if err := topicstore.SyncReview(ctx, obj, topicstore.ReviewKey, r); err != nil {
					t.Fatal(err)
				}
			}
		}
		now := time.Now().UTC()
		a.Hold("quake", "jp", topicrules.ReasonNewTopic, now, 3000, 12)
		b.Hold("#junk", "us", topicrules.ReasonNewAccounts, now, 50, 1)
		tick()

		out, err := runTrending(t, append([]string{"topics", "review", "--json"}, s3...)...)
		if err != nil {
			t.Fatalf("review list: %v\n%s", err, out)
		}
		var held []topicrules.Held
		if err := json.Unmarshal([]byte(out), &held); err != nil || len(held) != 2 {
			t.Fatalf("CLI lists %d held topics (%v), want quake and #junk:\n%s", len(held), err, out)
		}
		if out, err := runTrending(t, append([]string{"topics", "review", "approve", "quake", "--by", "alice"}, s3...)...); err != nil || out != "approved quake\n" {
			t.Fatalf("approve: %q, %v", out, err)
		}
		if !b.Blocks("quake") {
			t.Fatal("B does not block quake before the tick")
		}
		tick()
		for name, r := range map[string]*topicrules.Review{"A": a, "B": b} {
			if s, _ := r.Status("quake"); s != topicrules.Approved || r.Blocks("quake") {
				t.Fatalf("worker %s: quake %s one tick after the approval, want approved", name, s)
			}
		}
		if s, _ := b.Status("#junk"); s != topicrules.Pending {
			t.Fatalf("#junk is %s, want still pending", s)
		}
		if _, err := runTrending(t, append([]string{"topics", "review", "reject", "nope"}, s3...)...); err == nil {
			t.Fatal("rejecting a topic that is not held succeeded")
		}
	})
}

// TestServeTopicsReview: `trending serve --topics ... --token T` mounts /v1/topics/review
// over the shared queue: it lists what a worker held, an approval posted there reaches the
// worker at its next sync, and a request without the token is refused.
func TestServeTopicsReview(t *testing.T) {
	ctx := t.Context()
	emb, err := objstore.StartEmbedded(ctx, t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = emb.Endpoint, "trending", "k", "s"
	obj, err := objstore.New(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	worker := topicrules.NewReview(0)
	worker.Hold("quake", "eu", topicrules.ReasonNewTopic, time.Now().UTC(), 3000, 12)
	if err := topicstore.SyncReview(ctx, obj, topicstore.ReviewKey, worker); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	sctx, cancel := context.WithCancel(context.Background())
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs([]string{"serve", "--store", "bolt:" + filepath.Join(t.TempDir(), "serving.db"), "--listen", addr,
		"--log-format", "json", "--topics", "eu", "--token", "T", "--s3-endpoint", emb.Endpoint, "--s3-bucket", "trending",
		"--s3-access-key", "k", "--s3-secret-key", "s"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(sctx) }()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(15 * time.Second):
			t.Error("serve did not stop")
		}
	}()
	call := func(method, token, body string) (int, string) {
		req, _ := http.NewRequest(method, "http://"+addr+"/v1/topics/review", strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	var code int
	var body string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if code, body = call(http.MethodGet, "T", ""); code == 200 && strings.Contains(body, `"quake"`) {
			break
		}
	}
	if code != 200 || !strings.Contains(body, `"quake"`) {
		t.Fatalf("GET /v1/topics/review: %d %s\n%s", code, body, out.String())
	}
	if code, _ := call(http.MethodGet, "", ""); code != http.StatusUnauthorized {
		t.Fatalf("GET without the token: %d, want 401", code)
	}
	if code, body := call(http.MethodPost, "T", `{"topic":"quake","decision":"approve","by":"bob"}`); code != 200 {
		t.Fatalf("POST approve: %d %s", code, body)
	}
	if err := topicstore.SyncReview(ctx, obj, topicstore.ReviewKey, worker); err != nil {
		t.Fatal(err)
	}
	if s, _ := worker.Status("quake"); s != topicrules.Approved {
		t.Fatalf("worker's quake is %s after serve approved it, want approved", s)
	}
}

// onEveryBucket runs fn on a fresh bucket of the embedded S3 server and of the real MinIO
// (skipped without the integration environment), with the --s3-* flags naming it.
func onEveryBucket(t *testing.T, name string, fn func(t *testing.T, obj *objstore.Client, s3 []string)) {
	run := func(t *testing.T, endpoint, bucket, access, secret string) {
		oc := objstore.DefaultConfig()
		oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = endpoint, bucket, access, secret
		obj, err := objstore.New(t.Context(), oc)
		if err != nil {
			t.Fatal(err)
		}
		if err := obj.EnsureBucket(t.Context()); err != nil {
			t.Fatal(err)
		}
		fn(t, obj, []string{"--s3-endpoint", endpoint, "--s3-bucket", bucket, "--s3-access-key", access, "--s3-secret-key", secret})
	}
	t.Run("embedded", func(t *testing.T) {
		emb, err := objstore.StartEmbedded(t.Context(), t.TempDir(), "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer emb.Close()
		run(t, emb.Endpoint, "trending", "k", "s")
	})
	t.Run("minio", func(t *testing.T) {
		cfg := itest.S3(t)
		run(t, cfg.Endpoint, itest.Name(t, name), cfg.AccessKey, cfg.SecretKey)
	})
}
