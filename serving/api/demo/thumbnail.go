package demo

import (
	"fmt"
	"hash/fnv"
	"html"
	"net/http"
	"strings"
	"unicode/utf8"

	"trending/serving/api"
)

// Thumbnail draws a 160x90 SVG placeholder for item id: a colour chosen by the id's hash and
// the id written across it. trending up serves these for the load generator's items, so the
// demo's lists show images without reaching the internet.
func Thumbnail(id string) []byte {
	h := fnv.New32a()
	h.Write([]byte(id))
	sum := h.Sum32()
	hue, hue2 := sum%360, (sum/360+120)%360
	label := id
	if utf8.RuneCountInString(label) > 14 {
		label = string([]rune(label)[:13]) + "…"
	}
	return fmt.Appendf(nil, `<svg xmlns="http://www.w3.org/2000/svg" width="160" height="90" viewBox="0 0 160 90">`+
		`<defs><linearGradient id="g" x1="0" y1="0" x2="1" y2="1"><stop offset="0" stop-color="hsl(%d,55%%,45%%)"/>`+
		`<stop offset="1" stop-color="hsl(%d,55%%,30%%)"/></linearGradient></defs>`+
		`<rect width="160" height="90" fill="url(#g)"/><polygon points="68,30 68,60 94,45" fill="rgba(255,255,255,.85)"/>`+
		`<text x="8" y="82" font-family="sans-serif" font-size="12" fill="#fff">%s</text></svg>`,
		hue, hue2, html.EscapeString(label))
}

// ThumbnailPath is where trending up serves Thumbnail: GET ThumbnailPath?id=ITEM.
const ThumbnailPath = "/demo/thumbnail"

// ThumbnailURL is the URL template (with {id}) of the thumbnails trending up serves, relative
// to the API, for the load generator's metadata file.
const ThumbnailURL = ThumbnailPath + "?id={id}"

// ThumbnailRoute mounts ThumbnailHandler on an API server (api.Server.Handle).
func ThumbnailRoute() api.Route {
	return api.Route{Path: ThumbnailPath, Methods: []string{http.MethodGet}, Params: []string{"id"},
		Statuses: []int{http.StatusOK, http.StatusBadRequest}, Handler: ThumbnailHandler()}
}

// ThumbnailHandler answers GET ThumbnailPath?id=ITEM with the item's SVG placeholder; a
// missing or oversized id is a 400.
func ThumbnailHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.URL.Query().Get("id")
		if id == "" || len(id) > 256 || strings.ContainsAny(id, "\x00") {
			http.Error(w, `want ?id=ITEM (an item id of at most 256 bytes)`, http.StatusBadRequest)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "image/svg+xml")
		h.Set("Cache-Control", "public, max-age=86400")
		h.Set("X-Content-Type-Options", "nosniff")
		w.Write(Thumbnail(id))
	})
}
