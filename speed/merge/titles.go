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

// Titles looks up display titles for item ids. Implementations are safe for concurrent use.
// A missing title is simply absent from the map.
type Titles interface {
	Titles(ctx context.Context, ids []string) (map[string]string, error)
}

// NoTitles is the default: lists carry item ids only.
type NoTitles struct{}

// Titles implements Titles.
func (NoTitles) Titles(context.Context, []string) (map[string]string, error) { return nil, nil }

// FileTitles reads titles from a CSV file (item_id,title per line; a header line is allowed)
// or a JSON file (an object of id to title, or an array of {"item_id","title"}), reloading it
// when its modification time changes.
type FileTitles struct {
	Path string

	mu     sync.Mutex
	mod    time.Time
	titles map[string]string
}

// Titles implements Titles.
func (f *FileTitles) Titles(_ context.Context, ids []string) (map[string]string, error) {
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
	out := make(map[string]string, len(ids))
	for _, id := range ids {
		if t, ok := f.titles[id]; ok {
			out[id] = t
		}
	}
	return out, nil
}

func readTitlesFile(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("titles file: %w", err)
	}
	m := map[string]string{}
	trimmed := strings.TrimSpace(string(raw))
	switch {
	case strings.HasPrefix(trimmed, "{"):
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("titles file %s: want a JSON object of item_id to title: %w", path, err)
		}
	case strings.HasPrefix(trimmed, "["):
		var rows []struct {
			ItemID string `json:"item_id"`
			Title  string `json:"title"`
		}
		if err := json.Unmarshal(raw, &rows); err != nil {
			return nil, fmt.Errorf("titles file %s: want a JSON array of {\"item_id\",\"title\"}: %w", path, err)
		}
		for _, r := range rows {
			m[r.ItemID] = r.Title
		}
	default:
		r := csv.NewReader(strings.NewReader(string(raw)))
		r.FieldsPerRecord = 2
		for line := 1; ; line++ {
			rec, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("titles file %s: want CSV lines item_id,title: %w", path, err)
			}
			if line == 1 && rec[0] == "item_id" {
				continue
			}
			m[rec[0]] = rec[1]
		}
	}
	return m, nil
}

// HTTPTitles asks an HTTP endpoint: GET URL?ids=a,b,c answering a JSON object of id to title.
// Answers are cached for TTL (default 10 minutes).
type HTTPTitles struct {
	URL    string
	TTL    time.Duration
	Client *http.Client

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	title string
	at    time.Time
}

// Titles implements Titles.
func (h *HTTPTitles) Titles(ctx context.Context, ids []string) (map[string]string, error) {
	ttl := h.TTL
	if ttl == 0 {
		ttl = 10 * time.Minute
	}
	now := time.Now()
	out := make(map[string]string, len(ids))
	var missing []string
	h.mu.Lock()
	if h.cache == nil {
		h.cache = map[string]cached{}
	}
	for _, id := range ids {
		if c, ok := h.cache[id]; ok && now.Sub(c.at) < ttl {
			if c.title != "" {
				out[id] = c.title
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
	var got map[string]string
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&got); err != nil {
		return nil, fmt.Errorf("titles endpoint: want a JSON object of id to title: %w", err)
	}
	h.mu.Lock()
	for _, id := range missing {
		h.cache[id] = cached{title: got[id], at: now}
		if t := got[id]; t != "" {
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
