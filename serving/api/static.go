package api

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strconv"

	"trending/serving/dashboard"
)

// staticFile is one embedded dashboard file, read and compressed once at start.
type staticFile struct {
	ctype    []string
	body, gz []byte
	etag     string
}

// loadStatic reads the embedded dashboard: "/" is index.html, every other file its own path.
func loadStatic() (map[string]*staticFile, error) {
	out := map[string]*staticFile{}
	err := fs.WalkDir(dashboard.Files, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(dashboard.Files, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = http.DetectContentType(b)
		}
		f := &staticFile{ctype: []string{ct}, body: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`}
		if len(b) > 512 {
			f.gz = gzipBytes(b)
		}
		out["/"+p] = f
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("load dashboard: %w", err)
	}
	if out["/index.html"] == nil {
		panic("BUG: dashboard has no index.html")
	}
	out["/"] = out["/index.html"]
	return out, nil
}

var (
	hdrNoCache = []string{"no-cache"}
	// The dashboard loads nothing from elsewhere: it must work offline and behind a CDN.
	hdrCSP = []string{"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'; frame-ancestors 'none'"}
)

// serve writes the file, revalidated on every load (no-cache + ETag) so a new binary's
// dashboard shows at once while unchanged files cost a 304.
func (f *staticFile) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h["Cache-Control"] = hdrNoCache
	h["Content-Security-Policy"] = hdrCSP
	h["X-Content-Type-Options"] = hdrNoSniff
	h["Vary"] = []string{"Accept-Encoding"}
	body, etag := f.body, f.etag
	gz := f.gz != nil && acceptsGzip(r.Header.Get("Accept-Encoding"))
	if gz {
		body, etag = f.gz, etag[:len(etag)-1]+`-gz"`
	}
	h["Etag"] = []string{etag}
	if etagMatch(r.Header.Get("If-None-Match"), etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	h["Content-Type"] = f.ctype
	if gz {
		h["Content-Encoding"] = hdrGzip
	}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(body)
	}
}
