package demo

import (
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestThumbnail(t *testing.T) {
	for _, id := range []string{"V1", `<b>&"x"</b>`, "a-very-long-item-identifier-indeed"} {
		svg := Thumbnail(id)
		d := xml.NewDecoder(strings.NewReader(string(svg)))
		var text strings.Builder
		for {
			tok, err := d.Token()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%q: not well-formed SVG: %v\n%s", id, err, svg)
			}
			if c, ok := tok.(xml.CharData); ok {
				text.Write(c)
			}
		}
		want := id
		if len(want) > 14 {
			want = want[:13] + "…"
		}
		if text.String() != want {
			t.Errorf("%q: label %q, want %q", id, text.String(), want)
		}
	}
	if string(Thumbnail("V1")) == string(Thumbnail("V2")) {
		t.Error("two items drew the same thumbnail")
	}
}

func TestThumbnailHandler(t *testing.T) {
	h := ThumbnailHandler()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, ThumbnailPath+"?id=V7", nil))
	if w.Code != 200 || w.Header().Get("Content-Type") != "image/svg+xml" || w.Body.String() != string(Thumbnail("V7")) {
		t.Fatalf("%d %s %s", w.Code, w.Header(), w.Body)
	}
	for _, q := range []string{"", "?id=", "?id=" + strings.Repeat("x", 257)} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, ThumbnailPath+q, nil))
		if w.Code != 400 {
			t.Errorf("%q: %d, want 400", q, w.Code)
		}
	}
}
