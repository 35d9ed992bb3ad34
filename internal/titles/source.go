// Package titles is the one source of the display metadata (title, thumbnail URL) of the
// items every writer of served lists attaches: the speed layer's merger and the batch (exact
// hours, days, months, regional lists, the all-time base, topics lists) alike, so a list of
// any source and status carries the same metadata for the same item. A Source looks the
// metadata up (a CSV or JSON file, an HTTP endpoint); an Attacher puts it on a list's items
// and keeps the last known metadata of every item for when the source fails. The writers
// reach it through the serving store's write path (store.WithTitles), so a list cannot be
// written without it.
//
// In detail (DESIGN.md's file map has the line): the one source of the items' display
// metadata (title, thumbnail URL) for every writer of served lists: `Source` (`File`: CSV
// or JSON, reloaded when it changes; `HTTP`: GET URL?ids=..., answers cached 10 minutes,
// at most 200 ids a request; `Open` from `--titles`) and the `Attacher` (`attach.go`),
// which puts it on a list's items and keeps every item's last known metadata for when the
// source fails (`trending_title_failures_total`)
package titles

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"trending/internal/setting"
)

// Meta is what a list shows of an item beside its id: a display title and a thumbnail URL,
// either empty when unknown.
type Meta struct {
	Title     string `json:"title"`
	Thumbnail string `json:"thumbnail_url"`
}

// UnmarshalJSON reads a Meta from an object {"title","thumbnail_url"} or from a bare string,
// the title alone (the format before thumbnails, still accepted).
func (m *Meta) UnmarshalJSON(b []byte) error {
	var title string
	if err := json.Unmarshal(b, &title); err == nil {
		*m = Meta{Title: title}
		return nil
	}
	type plain Meta
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return errors.New("want a title string or an object {\"title\",\"thumbnail_url\"}")
	}
	*m = Meta(p)
	return nil
}

// Source looks up the display metadata of item ids. Implementations are safe for concurrent
// use. An item without metadata is simply absent from the map.
type Source interface {
	Titles(ctx context.Context, ids []string) (map[string]Meta, error)
}

// None is the default source: lists carry item ids only.
type None struct{}

// Titles implements Source.
func (None) Titles(context.Context, []string) (map[string]Meta, error) { return nil, nil }

// File reads item metadata from a CSV file (item_id,title or item_id,title,thumbnail_url
// per line; a header line is allowed) or a JSON file (an object of id to title or to
// {"title","thumbnail_url"}, or an array of {"item_id","title","thumbnail_url"}), reloading it
// when its modification time changes.
type File struct {
	Path string

	mu     sync.Mutex
	mod    time.Time
	titles map[string]Meta
}

// Titles implements Source.
func (f *File) Titles(_ context.Context, ids []string) (map[string]Meta, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := os.Stat(f.Path)
	if err != nil {
		return nil, fmt.Errorf("titles file: %w", err)
	}
	if f.titles == nil || !st.ModTime().Equal(f.mod) {
		m, err := readTitlesFile(f.Path)
		if err != nil {
			return nil, err
		}
		f.titles, f.mod = m, st.ModTime()
	}
	out := make(map[string]Meta, len(ids))
	for _, id := range ids {
		if t, ok := f.titles[id]; ok {
			out[id] = t
		}
	}
	return out, nil
}

func readTitlesFile(path string) (map[string]Meta, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("titles file: %w", err)
	}
	m := map[string]Meta{}
	trimmed := strings.TrimSpace(string(raw))
	switch {
	case strings.HasPrefix(trimmed, "{"):
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("titles file %s: want a JSON object of item_id to a title or {\"title\",\"thumbnail_url\"}: %w", path, err)
		}
	case strings.HasPrefix(trimmed, "["):
		var rows []struct {
			ItemID string `json:"item_id"`
			Meta
		}
		if err := json.Unmarshal(raw, &rows); err != nil {
			return nil, fmt.Errorf("titles file %s: want a JSON array of {\"item_id\",\"title\",\"thumbnail_url\"}: %w", path, err)
		}
		for _, r := range rows {
			m[r.ItemID] = r.Meta
		}
	default:
		r := csv.NewReader(strings.NewReader(string(raw)))
		r.FieldsPerRecord = -1
		for {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			line, _ := r.FieldPos(0)
			if err == nil && len(rec) != 2 && len(rec) != 3 {
				err = fmt.Errorf("line %d: %d fields", line, len(rec))
			}
			if err != nil {
				return nil, fmt.Errorf("titles file %s: want CSV lines item_id,title or item_id,title,thumbnail_url: %w", path, err)
			}
			if line == 1 && rec[0] == "item_id" {
				continue
			}
			meta := Meta{Title: rec[1]}
			if len(rec) == 3 {
				meta.Thumbnail = rec[2]
			}
			m[rec[0]] = meta
		}
	}
	return m, nil
}

// HTTP asks an HTTP endpoint: GET URL?ids=a,b,c answering a JSON object of id to a title
// or to {"title","thumbnail_url"}.
// Answers are cached for TTL (default 10 minutes), so a lookup asks the endpoint only for the
// ids it has not asked about within TTL: the new items of a list.
type HTTP struct {
	URL    string
	TTL    time.Duration
	Client *http.Client

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	meta Meta
	at   time.Time
}

// Titles implements Source.
func (h *HTTP) Titles(ctx context.Context, ids []string) (map[string]Meta, error) {
	ttl := h.TTL
	if ttl == 0 {
		ttl = 10 * time.Minute
	}
	now := time.Now()
	out := make(map[string]Meta, len(ids))
	var missing []string
	h.mu.Lock()
	if h.cache == nil {
		h.cache = map[string]cached{}
	}
	for _, id := range ids {
		if c, ok := h.cache[id]; ok && now.Sub(c.at) < ttl {
			if c.meta != (Meta{}) {
				out[id] = c.meta
			}
			continue
		}
		missing = append(missing, id)
	}
	h.mu.Unlock()
	if len(missing) == 0 {
		return out, nil
	}
	for len(missing) > 0 {
		n := min(len(missing), httpBatch)
		got, err := h.fetch(ctx, missing[:n])
		if err != nil {
			return nil, err
		}
		h.mu.Lock()
		for _, id := range missing[:n] {
			h.cache[id] = cached{meta: got[id], at: now}
			if t := got[id]; t != (Meta{}) {
				out[id] = t
			}
		}
		h.mu.Unlock()
		missing = missing[n:]
	}
	return out, nil
}

// httpBatch is the most ids one request to an HTTP source names: a list of 1,000 items (the
// all-time base has 10 x K) asks in several requests of URLs of a few kilobytes, which every
// server accepts.
const httpBatch = 200

// fetch asks the endpoint for ids.
func (h *HTTP) fetch(ctx context.Context, ids []string) (map[string]Meta, error) {
	u, err := url.Parse(h.URL)
	if err != nil {
		return nil, fmt.Errorf("titles url %q: %w", h.URL, err)
	}
	q := u.Query()
	q.Set("ids", strings.Join(ids, ","))
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	client := h.Client
	if client == nil {
		client = &http.Client{Timeout: 5 * time.Second}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("titles endpoint: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("titles endpoint: %s", resp.Status)
	}
	var got map[string]Meta
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&got); err != nil {
		return nil, fmt.Errorf("titles endpoint: want a JSON object of id to a title or {\"title\",\"thumbnail_url\"}: %w", err)
	}
	return got, nil
}

// Open builds a source from a spec (the --titles flag): "" (none), a file path (.csv or
// .json), or an http(s) URL. A file that does not exist is refused by the field name
// Titles (setting.ErrConfig; the commands name --titles).
func Open(spec string) (Source, error) {
	switch {
	case spec == "":
		return None{}, nil
	case strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://"):
		return &HTTP{URL: spec}, nil
	default:
		if _, err := os.Stat(spec); err != nil {
			return nil, setting.Invalid("Titles", "%s: %v (want a .csv or .json file, or an http(s) URL)", spec, err)
		}
		return &File{Path: spec}, nil
	}
}
