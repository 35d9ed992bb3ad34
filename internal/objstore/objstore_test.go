package objstore_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/internal/setting"
)

// suite is the contract every object store must keep; it runs against the embedded server
// and, in `make test`, against MinIO.
func suite(t *testing.T, st *objstore.Client) {
	ctx := itest.Context(t, 60*time.Second)
	if err := st.EnsureBucket(ctx); err != nil {
		t.Fatalf("ensure bucket: %v", err)
	}
	if err := st.EnsureBucket(ctx); err != nil {
		t.Fatalf("ensure bucket twice: %v", err)
	}
	if _, err := st.Get(ctx, "missing/key"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("get missing: %v, want ErrNotFound", err)
	}
	etag, err := st.Put(ctx, "p/a", []byte("alpha"))
	if err != nil || etag == "" {
		t.Fatalf("put: etag %q, %v", etag, err)
	}
	if _, err := st.PutIfAbsent(ctx, "p/a", []byte("other")); !errors.Is(err, objstore.ErrExists) {
		t.Fatalf("put-if-absent over existing: %v, want ErrExists", err)
	}
	if _, err := st.PutIfAbsent(ctx, "p/b", []byte("beta")); err != nil {
		t.Fatalf("put-if-absent new: %v", err)
	}
	// A read-modify-write: the ETag read back guards the replace, and a stale one is refused.
	if _, err := st.Put(ctx, "q/v", []byte("v1")); err != nil {
		t.Fatalf("put q/v: %v", err)
	}
	body, v1, err := st.GetVersion(ctx, "q/v")
	if err != nil || string(body) != "v1" || v1 == "" {
		t.Fatalf("get version: %q %q %v", body, v1, err)
	}
	v2, err := st.PutIfMatch(ctx, "q/v", []byte("v2"), v1)
	if err != nil || v2 == v1 {
		t.Fatalf("put-if-match current: %q, %v", v2, err)
	}
	if _, err := st.PutIfMatch(ctx, "q/v", []byte("lost"), v1); !errors.Is(err, objstore.ErrChanged) {
		t.Fatalf("put-if-match stale: %v, want ErrChanged", err)
	}
	if _, err := st.PutIfMatch(ctx, "missing/key", []byte("x"), v1); !errors.Is(err, objstore.ErrChanged) {
		t.Fatalf("put-if-match missing: %v, want ErrChanged", err)
	}
	if got, _ := st.Get(ctx, "q/v"); string(got) != "v2" {
		t.Fatalf("get q/v = %q, want v2", got)
	}
	if _, _, err := st.GetVersion(ctx, "missing/key"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("get version missing: %v, want ErrNotFound", err)
	}
	big := bytes.Repeat([]byte("0123456789abcdef"), (6<<20)/16) // 6 MiB: multipart at 5 MiB parts
	if _, err := st.Put(ctx, "p/big", big); err != nil {
		t.Fatalf("put big: %v", err)
	}
	got, err := st.Get(ctx, "p/big")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("get big: %d bytes, %v; want %d bytes back", len(got), err, len(big))
	}
	if got, _ := st.Get(ctx, "p/a"); string(got) != "alpha" {
		t.Fatalf("get p/a = %q, want alpha (the conditional put must not have replaced it)", got)
	}
	list, err := st.List(ctx, "p/")
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	var keys []string
	for _, o := range list {
		keys = append(keys, o.Key)
	}
	if len(keys) != 3 || keys[0] != "p/a" || keys[1] != "p/b" || keys[2] != "p/big" {
		t.Fatalf("list keys %v, want [p/a p/b p/big]", keys)
	}
	if list[2].Size != int64(len(big)) {
		t.Fatalf("listed size %d, want %d", list[2].Size, len(big))
	}
	if err := st.Delete(ctx, "p/a", "p/never"); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := st.Get(ctx, "p/a"); !errors.Is(err, objstore.ErrNotFound) {
		t.Fatalf("get deleted: %v, want ErrNotFound", err)
	}
}

func TestEmbedded(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	emb, err := objstore.StartEmbedded(ctx, dir, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer emb.Close()
	cfg := objstore.DefaultConfig()
	cfg.Endpoint, cfg.Bucket, cfg.AccessKey, cfg.SecretKey, cfg.PartSize = emb.Endpoint, "trending", "x", "y", objstore.MinPartSize
	st, err := objstore.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	suite(t, st)
	// Objects are plain files on disk, so the archive can be read straight from ./data.
	if b, err := os.ReadFile(filepath.Join(dir, "buckets", "trending", "p", "b")); err != nil || string(b) != "beta" {
		t.Fatalf("object on disk: %q, %v", b, err)
	}
}

func TestMinIO(t *testing.T) {
	s3 := itest.S3(t)
	cfg := objstore.DefaultConfig()
	cfg.Endpoint, cfg.Bucket, cfg.AccessKey, cfg.SecretKey, cfg.PartSize = s3.Endpoint, itest.Name(t, "objstore"), s3.AccessKey, s3.SecretKey, objstore.MinPartSize
	st, err := objstore.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	suite(t, st)
}

func TestValidate(t *testing.T) {
	for name, mod := range map[string]func(*objstore.Config){
		"no bucket":  func(c *objstore.Config) { c.Bucket = "" },
		"bad url":    func(c *objstore.Config) { c.Endpoint = "127.0.0.1:9000" },
		"half creds": func(c *objstore.Config) { c.SecretKey = "" },
		"bad scheme": func(c *objstore.Config) { c.Endpoint = "ftp://x" },
	} {
		t.Run(name, func(t *testing.T) {
			c := objstore.DefaultConfig()
			c.Endpoint, c.Bucket, c.AccessKey, c.SecretKey = "http://x", "b", "a", "s"
			mod(&c)
			if err := c.Validate(); err == nil {
				t.Fatal("want an error")
			}
		})
	}
	c := objstore.DefaultConfig()
	c.Bucket, c.Endpoint = "b", "http://127.0.0.1:1"
	if err := c.Validate(); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
}

// TestConfigZeroMeansZero: New takes a Config as it is. DefaultConfig works; a zero part
// size or region is refused by field, not replaced by the default; a zero timeout is no
// timeout.
func TestConfigZeroMeansZero(t *testing.T) {
	base := objstore.DefaultConfig()
	base.Endpoint, base.Bucket = "http://127.0.0.1:1", "b"
	timeout := func(c objstore.Config) time.Duration {
		t.Helper()
		st, err := objstore.New(context.Background(), c)
		if err != nil {
			t.Fatalf("New(%+v): %v", c, err)
		}
		hc, ok := st.S3().Options().HTTPClient.(interface{ GetTimeout() time.Duration })
		if !ok {
			t.Fatalf("HTTP client %T has no timeout to read", st.S3().Options().HTTPClient)
		}
		return hc.GetTimeout()
	}
	if got := timeout(base); got != 60*time.Second {
		t.Fatalf("DefaultConfig: request timeout %s, want 60s", got)
	}
	noTimeout := base
	noTimeout.Timeout = 0
	if got := timeout(noTimeout); got != 0 {
		t.Fatalf("Timeout 0: request timeout %s, want none (0)", got)
	}
	for field, mod := range map[string]func(*objstore.Config){
		"PartSize": func(c *objstore.Config) { c.PartSize = 0 },
		"Region":   func(c *objstore.Config) { c.Region = "" },
	} {
		c := base
		mod(&c)
		_, err := objstore.New(context.Background(), c)
		if !errors.Is(err, setting.ErrConfig) || !strings.Contains(err.Error(), field+":") {
			t.Errorf("%s zero: New error %v, want a setting error naming %s", field, err, field)
		}
	}
}

func TestIsRetryable(t *testing.T) {
	if objstore.IsRetryable(objstore.ErrNotFound) || objstore.IsRetryable(nil) {
		t.Fatal("not found and nil must not be retryable")
	}
	if !objstore.IsRetryable(errors.New("dial tcp: connection refused")) {
		t.Fatal("a connection error must be retryable")
	}
	// A real request to a closed port: the SDK wraps the dial error with HTTP status 0.
	cfg := objstore.DefaultConfig()
	cfg.Endpoint, cfg.Bucket, cfg.AccessKey, cfg.SecretKey, cfg.Timeout = "http://127.0.0.1:1", "b", "x", "y", 2*time.Second
	st, err := objstore.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Get(context.Background(), "k")
	if err == nil || !objstore.IsRetryable(err) {
		t.Fatalf("unreachable server: %v, want a retryable error", err)
	}
}
