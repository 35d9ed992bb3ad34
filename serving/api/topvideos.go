package api

import (
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// GET /v1/top-videos?window=1h|24h|all&k=N: the live lists in the shape of the requirements'
// video API (docs/requirements.md), for clients written against it: {"window", "as_of",
// "videos": [{"video_id", "views"}]}. The same precomputed lists as GET /v1/trending, one
// lookup each; 1h is the sliding window one hour long (the hour), 24h the one 24 hours long
// (the day), all the all-time list, each when configured (windowset.Set.Aliases).

// topVideosWindows are the video API's window names.
var topVideosWindows = []string{"1h", "24h", "all"}

// TopVideosResponse is GET /v1/top-videos's body.
type TopVideosResponse struct {
	Window string     `json:"window"`
	AsOf   time.Time  `json:"as_of"`
	Videos []TopVideo `json:"videos"`
}

// TopVideo is one ranked video.
type TopVideo struct {
	VideoID string `json:"video_id"`
	Views   uint64 `json:"views"`
	// Title and ThumbnailURL: beyond the requirements' shape, absent when unknown.
	Title        string `json:"title,omitempty"`
	ThumbnailURL string `json:"thumbnail_url,omitempty"`
}

func (s *Server) handleTopVideos(w http.ResponseWriter, r *http.Request) {
	p, aerr := params(r.URL.RawQuery, "GET /v1/top-videos", "window", "k")
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	var served []string
	for _, n := range topVideosWindows {
		if _, ok := s.cfg.Windows.ResolveLive(n); ok {
			served = append(served, n)
		}
	}
	win, ok := s.cfg.Windows.ResolveLive(p["window"])
	if !ok || !slices.Contains(topVideosWindows, p["window"]) {
		writeError(w, badRequest(codeBadParameter, "window %q: use %s (of 1h, 24h and all, those this deployment serves)", trunc(p["window"]), joinOr(served)))
		return
	}
	k := s.cfg.DefaultLimit
	if v, set := p["k"]; set {
		n, ok := parseSmallInt(v)
		if !ok || n < 1 || n > s.cfg.MaxLimit {
			writeError(w, badRequest(codeBadParameter, "k %q: use a whole number from 1 to %d (default %d)", trunc(v), s.cfg.MaxLimit, s.cfg.DefaultLimit))
			return
		}
		k = n
	}
	e, found := s.cache.Get(win, time.Time{})
	if !found {
		now := s.cfg.Now()
		writeError(w, s.missing(trendingQuery{window: win, limit: k}, now))
		return
	}
	head, videos := e.topVideos(p["window"], k)
	h := w.Header()
	h["Cache-Control"] = s.cacheControl
	h["Content-Type"] = hdrJSON
	h["X-Content-Type-Options"] = hdrNoSniff
	h["Content-Length"] = []string{strconv.Itoa(len(head) + len(videos) + len(topVideosTail))}
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		w.Write(head)
		w.Write(videos)
		w.Write(topVideosTail)
	}
}

// topVideosTail ends a GET /v1/top-videos body.
var topVideosTail = []byte("]}\n")

// topVideos returns the body of GET /v1/top-videos?window=alias&k=k over this list but its
// tail (topVideosTail): a TopVideosResponse as json.Marshal writes it, and a newline. The
// first k video objects are encoded once per version of the list and not copied: a read of
// 1,000 videos costs what one of 10 does, bar the bytes written.
func (e *entry) topVideos(alias string, k int) (head, videos []byte) {
	e.videosOnce.Do(func() {
		for i, it := range e.list.Items {
			if i > 0 {
				e.videos = append(e.videos, ',')
			}
			v, _ := json.Marshal(TopVideo{VideoID: it.ItemID, Views: it.Views, Title: it.Title, ThumbnailURL: it.Thumbnail}) // strings and a number: it cannot fail
			e.videos = append(e.videos, v...)
			e.videoEnds = append(e.videoEnds, len(e.videos))
		}
	})
	head, _ = json.Marshal(struct {
		Window string    `json:"window"`
		AsOf   time.Time `json:"as_of"`
	}{alias, e.list.AsOf})
	head = append(head[:len(head)-1], `,"videos":[`...)
	n := 0
	if k = min(k, len(e.videoEnds)); k > 0 {
		n = e.videoEnds[k-1]
	}
	return head, e.videos[:n]
}

// joinOr lists names as "a, b or c" ("none" when empty).
func joinOr(names []string) string {
	switch len(names) {
	case 0:
		return "none"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
