package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trending/internal/itest"
	"trending/model"
	boltstore "trending/serving/store/bolt"
	"trending/serving/store/storetest"
)

// TestServeModeration: `trending serve --moderation` as a split deployment's API on MinIO.
// An item removed by `trending moderation remove` in the bucket (another process) leaves the
// served list within a minute (the watcher's 10 s and a refresh); a restore through the
// server's /v1/moderation (behind --token) brings it back at once. It logs both delays.
func TestServeModeration(t *testing.T) {
	s3 := itest.S3(t)
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "serving.db")
	st, err := boltstore.Open(dbPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Put(context.Background(), storetest.MakeList("hour", time.Time{}, 5, model.SourceSpeed, 30, 100)); err != nil {
		t.Fatal(err)
	}
	st.Close()
	bucket := itest.Name(t, "modserve")
	s3Args := []string{"--s3-endpoint", s3.Endpoint, "--s3-access-key", s3.AccessKey, "--s3-secret-key", s3.SecretKey, "--s3-bucket", bucket}
	addr := freeAddr(t)
	srv := startInProcess(t, append([]string{"serve", "--moderation", "--store", "bolt:" + dbPath, "--listen", addr, "--token", "T",
		"--log-format", "json", "--log-level", "warn"}, s3Args...)...)
	defer srv.stop()
	base := "http://" + addr
	served := func() string {
		resp, err := http.Get(base + "/v1/trending?window=hour&limit=5")
		if err != nil {
			return err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	waitFor := func(what string, limit time.Duration, ok func(string) bool) time.Duration {
		t.Helper()
		start := time.Now()
		var last string
		for time.Since(start) < limit {
			if last = served(); ok(last) {
				return time.Since(start)
			}
			time.Sleep(200 * time.Millisecond)
		}
		t.Fatalf("%s: never within %s; last %.400s", what, limit, last)
		return 0
	}
	has := func(item string) func(string) bool {
		return func(b string) bool { return strings.Contains(b, `"item_id":"`+item+`"`) }
	}
	waitFor("the list served", 30*time.Second, has("V0"))
	cli := newRootCommand()
	var out bytes.Buffer
	cli.SetOut(&out)
	cli.SetErr(&out)
	cli.SetArgs(append([]string{"moderation", "remove", "V0", "--reason", "spam", "--by", "test"}, s3Args...))
	if err := cli.Execute(); err != nil {
		t.Fatalf("moderation remove: %v\n%s", err, out.String())
	}
	removed := waitFor("V0 removed through the bucket", time.Minute, func(b string) bool { return !has("V0")(b) && has("V5")(b) })
	// The write route needs the token.
	body := `{"item":"V0","action":"restore","reason":"appeal","by":"test"}`
	resp, err := http.Post(base+"/v1/moderation", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST without the token: %s, want 401", resp.Status)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/moderation", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer T")
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST restore: %s", resp.Status)
	}
	restored := waitFor("V0 restored", 30*time.Second, has("V0"))
	t.Logf("removed in the bucket by another process: gone from the served list after %s; restored through the API: back after %s",
		removed.Round(100*time.Millisecond), restored.Round(100*time.Millisecond))
}
