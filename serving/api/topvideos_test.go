package api

import (
	"net/http"
	"strings"
	"testing"
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
