package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"trending/model"
	"trending/serving/store/storetest"
)

// TestTopVideos: the video API's shape over the same lists: 1h is the live hour, 24h the
// live day, all all time; k bounds the list; bad windows, k and parameters are 400s naming
// what to use.
func TestTopVideos(t *testing.T) {
	f := newFixture(t, nil)
	w := f.get("/v1/top-videos?window=1h&k=3")
	if w.Code != http.StatusOK || w.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("1h: %d %s", w.Code, w.Body)
	}
	got := decode[TopVideosResponse](t, w)
	hour := decode[ListResponse](t, f.get("/v1/trending?window=hour&limit=3"))
	if got.Window != "1h" || !got.AsOf.Equal(hour.AsOf) || len(got.Videos) != 3 {
		t.Fatalf("1h: %+v", got)
	}
	for i, v := range got.Videos {
		if v.VideoID != hour.Items[i].ItemID || v.Views != hour.Items[i].Views || v.Title != hour.Items[i].Title || v.ThumbnailURL != hour.Items[i].ThumbnailURL {
			t.Fatalf("video %d: %+v, the hour list has %+v", i, v, hour.Items[i])
		}
	}
	day := decode[ListResponse](t, f.get("/v1/trending?window=day")) // both default to DefaultLimit
	if got := decode[TopVideosResponse](t, f.get("/v1/top-videos?window=24h")); len(got.Videos) != len(day.Items) || got.Videos[0].VideoID != day.Items[0].ItemID {
		t.Fatalf("24h (default k): %d videos, the day list %d", len(got.Videos), len(day.Items))
	}
	if got := decode[TopVideosResponse](t, f.get("/v1/top-videos?window=all&k=1")); got.Window != "all" || len(got.Videos) != 1 {
		t.Fatalf("all: %+v", got)
	}
	for _, c := range []struct{ q, code, detail string }{
		{"window=hour", codeBadParameter, "use 1h, 24h or all"},
		{"", codeBadParameter, "use 1h, 24h or all"},
		{"window=1h&k=0", codeBadParameter, "from 1 to 100"},
		{"window=1h&k=101", codeBadParameter, "from 1 to 100"},
		{"window=1h&k=ten", codeBadParameter, "whole number"},
		{"window=1h&limit=3", codeUnknownParameter, "limit"},
	} {
		w := f.get("/v1/top-videos?" + c.q)
		e := decode[ErrorResponse](t, w)
		if w.Code != http.StatusBadRequest || e.Error != c.code || !strings.Contains(e.Detail, c.detail) {
			t.Errorf("%q: %d %+v, want 400 %s mentioning %q", c.q, w.Code, e, c.code, c.detail)
		}
	}
}

// TestTopVideosBody: the body assembled from the video objects encoded once per version is
// byte for byte json.Marshal of the response (and a newline), for every window, k below, at
// and above the list's length, titles with quotes and HTML characters, and an empty list;
// HEAD says the same length and writes nothing.
func TestTopVideosBody(t *testing.T) {
	f := newFixture(t, func(c *Config) {
		k := DefaultConfigForK(1000)
		c.MaxLimit, c.DefaultLimit = k.MaxLimit, k.DefaultLimit
	})
	empty := storetest.MakeList("day", time.Time{}, 200, model.SourceSpeed, 0, 0)
	if err := f.st.Put(context.Background(), empty); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Cache().Refresh(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		window, list string
		n            int // items of the list
	}{{"1h", "hour", 120}, {"24h", "day", 0}, {"all", "all", 100}} {
		e, ok := f.srv.Cache().Get(c.list, time.Time{})
		if !ok || len(e.list.Items) != c.n {
			t.Fatalf("%s: cached %v with %d items, want %d", c.list, ok, len(e.list.Items), c.n)
		}
		for _, k := range []int{1, 3, 50, 120, 121, 1000} {
			q := fmt.Sprintf("/v1/top-videos?window=%s&k=%d", c.window, k)
			want := TopVideosResponse{Window: c.window, AsOf: e.list.AsOf, Videos: []TopVideo{}}
			for _, it := range e.list.Items[:min(k, c.n)] {
				want.Videos = append(want.Videos, TopVideo{VideoID: it.ItemID, Views: it.Views, Title: it.Title, ThumbnailURL: it.Thumbnail})
			}
			wb, _ := json.Marshal(want)
			wb = append(wb, '\n')
			w := f.get(q)
			if w.Code != 200 || w.Body.String() != string(wb) || w.Header().Get("Content-Length") != strconv.Itoa(len(wb)) {
				t.Fatalf("%s: %d, length %s, body\n%.300s\nwant %d bytes\n%.300s", q, w.Code, w.Header().Get("Content-Length"), w.Body, len(wb), wb)
			}
			if h := f.do(http.MethodHead, q); h.Code != 200 || h.Body.Len() != 0 || h.Header().Get("Content-Length") != strconv.Itoa(len(wb)) {
				t.Fatalf("HEAD %s: %d, %d bytes, length %s", q, h.Code, h.Body.Len(), h.Header().Get("Content-Length"))
			}
		}
	}
}
