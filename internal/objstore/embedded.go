package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3afero"
	"github.com/spf13/afero"
)

// Embedded is an in-process S3 server (gofakes3) that keeps objects as plain files under a
// local directory: the object store of `make run`. Clients reach it over HTTP through the same
// aws-sdk-go-v2 path as real S3. Objects live in DIR/buckets/BUCKET/KEY, so a Parquet file
// written by the archive can be opened directly from disk.
type Embedded struct {
	// Endpoint is the URL to give Config.Endpoint.
	Endpoint string
	srv      *http.Server
	ln       net.Listener
}

// StartEmbedded serves dir on addr (e.g. 127.0.0.1:0 for any free port) until ctx ends or
// Close is called.
func StartEmbedded(ctx context.Context, dir, addr string) (*Embedded, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("embedded s3: %w", err)
	}
	fs := afero.NewBasePathFs(afero.NewOsFs(), abs)
	multi, err := s3afero.MultiBucket(fs)
	if err != nil {
		return nil, fmt.Errorf("embedded s3 over %s: %w", abs, err)
	}
	backend := &prefixLister{MultiBucketBackend: multi, buckets: afero.NewBasePathFs(afero.NewOsFs(), filepath.Join(abs, "buckets"))}
	faker := gofakes3.New(backend, gofakes3.WithTimeSkewLimit(0), gofakes3.WithoutVersioning(), gofakes3.WithAutoBucket(true))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("embedded s3 listen %s: %w", addr, err)
	}
	e := &Embedded{Endpoint: "http://" + ln.Addr().String(), ln: ln,
		srv: &http.Server{Handler: noLifecycle(faker.Server()), ReadHeaderTimeout: 10 * time.Second}}
	go func() {
		if err := e.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			_ = err // Serve only fails when the listener does; Close reports nothing more useful.
		}
	}()
	go func() { <-ctx.Done(); _ = e.Close() }()
	return e, nil
}

// Close stops the server, waiting up to five seconds for requests in flight.
func (e *Embedded) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return e.srv.Shutdown(ctx)
}

// prefixLister lists a bucket by walking only the directory its prefix names. s3afero walks
// the whole bucket for every prefix that is not a "/"-delimited listing (and under its one
// lock, so puts and gets wait too): with a few thousand archive files and checkpoint pieces
// that walk was two thirds of `trending up`'s CPU, each checkpoint's prune and each batch
// pass listing everything to find a handful of keys. The objects it finds are described by
// the backend's own HeadObject, so sizes and ETags are exactly what s3afero would list.
type prefixLister struct {
	*s3afero.MultiBucketBackend
	buckets afero.Fs // the backend's buckets directory
}

// PutObject reads the whole body before s3afero creates the file. s3afero writes the body
// straight into the object's file and its metadata after it, so an upload cut off midway (a
// client's context cancelled: a sibling upload failed, Ctrl-C) left a partial object without
// metadata, which every later listing of its prefix failed on (500) and which S3 never
// shows: an object is there whole or not at all.
func (b *prefixLister) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	body := make([]byte, size)
	if _, err := io.ReadFull(input, body); err != nil {
		return gofakes3.PutObjectResult{}, fmt.Errorf("read the body of %s: %w", key, err)
	}
	return b.MultiBucketBackend.PutObject(bucket, key, meta, bytes.NewReader(body), size, cond)
}

func (b *prefixLister) ListBucket(bucket string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	if prefix == nil || prefix.HasDelimiter || !page.IsEmpty() || gofakes3.ValidateBucketName(bucket) != nil {
		return b.MultiBucketBackend.ListBucket(bucket, prefix, page)
	}
	if ok, err := b.MultiBucketBackend.BucketExists(bucket); err != nil || !ok {
		return b.MultiBucketBackend.ListBucket(bucket, prefix, page) // its error
	}
	// The deepest directory every matching key lies under: the prefix up to its last '/'.
	dir := ""
	if prefix.HasPrefix {
		if i := strings.LastIndexByte(prefix.Prefix, '/'); i >= 0 {
			dir = prefix.Prefix[:i]
		}
	}
	type found struct {
		key   string
		mtime time.Time
	}
	var keys []found
	root := filepath.FromSlash(path.Join(bucket, dir))
	err := afero.Walk(b.buckets, root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			if os.IsNotExist(err) || errors.Is(err, syscall.ENOTDIR) {
				return nil // no such directory (yet), removed while walking, or a file: nothing there
			}
			return err
		}
		if info.IsDir() {
			return nil
		}
		key := strings.TrimPrefix(filepath.ToSlash(p), bucket+"/")
		if prefix.Match(key, nil) {
			keys = append(keys, found{key, info.ModTime()})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := gofakes3.NewObjectList()
	for _, f := range keys {
		obj, err := b.MultiBucketBackend.HeadObject(bucket, f.key)
		if gofakes3.HasErrorCode(err, gofakes3.ErrNoSuchKey) {
			continue // deleted since the walk saw it
		} else if err != nil {
			return nil, err
		}
		out.Add(&gofakes3.Content{Key: f.key, LastModified: gofakes3.NewContentTime(f.mtime), ETag: gofakes3.FormatETag(obj.Hash), Size: obj.Size})
	}
	return out, nil
}

// noLifecycle answers a bucket's lifecycle configuration requests with S3's NotImplemented:
// gofakes3 has no lifecycle rules and would take a PUT ?lifecycle for a bucket creation.
func noLifecycle(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.URL.Query()["lifecycle"]; ok {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotImplemented)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code>` +
				`<Message>the embedded S3 server keeps no lifecycle rules</Message></Error>`))
			return
		}
		h.ServeHTTP(w, r)
	})
}
