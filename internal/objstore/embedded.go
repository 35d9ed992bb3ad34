package objstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
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
	backend, err := s3afero.MultiBucket(fs)
	if err != nil {
		return nil, fmt.Errorf("embedded s3 over %s: %w", abs, err)
	}
	faker := gofakes3.New(backend, gofakes3.WithTimeSkewLimit(0), gofakes3.WithoutVersioning(), gofakes3.WithAutoBucket(true))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("embedded s3 listen %s: %w", addr, err)
	}
	e := &Embedded{Endpoint: "http://" + ln.Addr().String(), ln: ln,
		srv: &http.Server{Handler: faker.Server(), ReadHeaderTimeout: 10 * time.Second}}
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
