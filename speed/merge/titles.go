package merge

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

// Titles looks up the display metadata of item ids. Implementations are safe for concurrent
// use. An item without metadata is simply absent from the map.
type Titles interface {
	Titles(ctx context.Context, ids []string) (map[string]Meta, error)
}

// NoTitles is the default: lists carry item ids only.
type NoTitles struct{}

// Titles implements Titles.
func (NoTitles) Titles(context.Context, []string) (map[string]Meta, error) { return nil, nil }

// FileTitles reads item metadata from a CSV file (item_id,title or item_id,title,thumbnail_url
// per line; a header line is allowed) or a JSON file (an object of id to title or to
// {"title","thumbnail_url"}, or an array of {"item_id","title","thumbnail_url"}), reloading it
// when its modification time changes.
type FileTitles struct {
	Path string

	mu     sync.Mutex
	mod    time.Time
	titles map[string]Meta
}

// Titles implements Titles.
func (f *FileTitles) Titles(_ context.Context, ids []string) (map[string]Meta, error) {
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

// HTTPTitles asks an HTTP endpoint: GET URL?ids=a,b,c answering a JSON object of id to a title
// or to {"title","thumbnail_url"}.
// Answers are cached for TTL (default 10 minutes).
type HTTPTitles struct {
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

// Titles implements Titles.
func (h *HTTPTitles) Titles(ctx context.Context, ids []string) (map[string]Meta, error) {
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
	u, err := url.Parse(h.URL)
	if err != nil {
		return nil, fmt.Errorf("titles url %q: %w", h.URL, err)
	}
	q := u.Query()
	q.Set("ids", strings.Join(missing, ","))
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
	h.mu.Lock()
	for _, id := range missing {
		h.cache[id] = cached{meta: got[id], at: now}
		if t := got[id]; t != (Meta{}) {
			out[id] = t
		}
	}
	h.mu.Unlock()
	return out, nil
}

// OpenTitles builds a title source from a spec: "" (none), a file path (.csv or .json), or an
// http(s) URL.
func OpenTitles(spec string) (Titles, error) {
	switch {
	case spec == "":
		return NoTitles{}, nil
	case strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://"):
		return &HTTPTitles{URL: spec}, nil
	default:
		if _, err := os.Stat(spec); err != nil {
			return nil, setting.Invalid("Titles", "%s: %v (want a .csv or .json file, or an http(s) URL)", spec, err)
		}
		return &FileTitles{Path: spec}, nil
	}
}
