package objstore

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/spf13/afero"
)

// TestPrefixListerListsAsTheBackend: for random keys and prefixes, listing by walking only the
// prefix's directory gives exactly the objects (key, size, ETag) of s3afero's walk of the whole
// bucket, including prefixes that end inside a name, name a missing directory, or are empty.
func TestPrefixListerListsAsTheBackend(t *testing.T) {
	dir := t.TempDir()
	fs := afero.NewBasePathFs(afero.NewOsFs(), dir)
	multi, err := s3afero.MultiBucket(fs)
	if err != nil {
		t.Fatal(err)
	}
	b := &prefixLister{MultiBucketBackend: multi, buckets: afero.NewBasePathFs(afero.NewOsFs(), filepath.Join(dir, "buckets"))}
	if err := b.CreateBucket("bucket"); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	parts := []string{"a", "ab", "a-b", "archive", "views", "dt=2026-12-01", "hour=03", "x.parquet", "pieces", "0"}
	var keys []string
	for range 300 {
		n := 1 + rng.IntN(4)
		k := ""
		for i := range n {
			if i > 0 {
				k += "/"
			}
			k += parts[rng.IntN(len(parts))]
		}
		keys = append(keys, k)
	}
	for _, k := range keys {
		body := fmt.Appendf(nil, "object %s", k)
		// A key that is also a directory of another cannot exist on a file system; skip it.
		if _, err := b.PutObject("bucket", k, nil, bytes.NewReader(body), int64(len(body)), nil); err != nil {
			continue
		}
	}
	prefixes := []string{"", "a", "a/", "ab/a", "archive/views/", "archive/vi", "nope/", "a-b/archive/x", "pieces/0/"}
	for range 40 {
		k := keys[rng.IntN(len(keys))]
		prefixes = append(prefixes, k[:rng.IntN(len(k)+1)])
	}
	for _, p := range prefixes {
		pre := gofakes3.NewPrefix(&p, nil)
		got, err := b.ListBucket("bucket", &pre, gofakes3.ListBucketPage{})
		if err != nil {
			t.Fatalf("prefix %q: %v", p, err)
		}
		want, err := multi.ListBucket("bucket", &pre, gofakes3.ListBucketPage{})
		if err != nil {
			t.Fatal(err)
		}
		if g, w := describe(got), describe(want); !slices.Equal(g, w) {
			t.Errorf("prefix %q:\n got %v\nwant %v", p, g, w)
		}
	}
	if _, err := b.ListBucket("missing", &gofakes3.Prefix{HasPrefix: true, Prefix: "a/"}, gofakes3.ListBucketPage{}); !gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchBucket) {
		t.Errorf("a missing bucket: %v, want NoSuchBucket", err)
	}
}

func describe(l *gofakes3.ObjectList) []string {
	var out []string
	for _, c := range l.Contents {
		out = append(out, fmt.Sprintf("%s %d %s", c.Key, c.Size, c.ETag))
	}
	slices.Sort(out)
	return out
}

// TestCutUploadLeavesNothing: an upload whose body ends early (the client gave up) stores
// nothing, so the prefix still lists; s3afero alone kept a partial file without metadata,
// which made every later listing of the prefix fail.
func TestCutUploadLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	multi, err := s3afero.MultiBucket(afero.NewBasePathFs(afero.NewOsFs(), dir))
	if err != nil {
		t.Fatal(err)
	}
	b := &prefixLister{MultiBucketBackend: multi, buckets: afero.NewBasePathFs(afero.NewOsFs(), filepath.Join(dir, "buckets"))}
	if err := b.CreateBucket("bucket"); err != nil {
		t.Fatal(err)
	}
	cut := io.MultiReader(bytes.NewReader([]byte("half of it")), iotest.ErrReader(errors.New("connection reset")))
	if _, err := b.PutObject("bucket", "pieces/a.piece", nil, cut, 100, nil); err == nil {
		t.Fatal("a cut upload succeeded")
	}
	if _, err := b.PutObject("bucket", "pieces/b.piece", nil, bytes.NewReader([]byte("whole")), 5, nil); err != nil {
		t.Fatal(err)
	}
	p := "pieces/"
	pre := gofakes3.NewPrefix(&p, nil)
	l, err := b.ListBucket("bucket", &pre, gofakes3.ListBucketPage{})
	if err != nil {
		t.Fatalf("list after a cut upload: %v", err)
	}
	if got := describe(l); len(got) != 1 || !strings.HasPrefix(got[0], "pieces/b.piece 5 ") {
		t.Fatalf("listed %v, want only pieces/b.piece", got)
	}
	if _, err := b.HeadObject("bucket", "pieces/a.piece"); !gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchKey) {
		t.Fatalf("head of the cut object: %v, want NoSuchKey", err)
	}
}
