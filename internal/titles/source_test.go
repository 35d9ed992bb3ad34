package titles

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestFileTitles: every file format reads to the same metadata; a malformed file is an
// error naming the titles file, a missing one refused when opened.
func TestFileTitles(t *testing.T) {
	dir := t.TempDir()
	cats := Meta{Title: "Cats", Thumbnail: "https://img.example/V7.jpg"}
	dogs := Meta{Title: "Dogs, again"}
	for name, body := range map[string]string{
		"t.csv":      "item_id,title\nV7,Cats\nV8,\"Dogs, again\"\n",
		"thumbs.csv": "item_id,title,thumbnail_url\nV7,Cats,https://img.example/V7.jpg\nV8,\"Dogs, again\",\n",
		"mixed.csv":  "V7,Cats,https://img.example/V7.jpg\nV8,\"Dogs, again\"\n",
		"t.json":     `{"V7":"Cats","V8":"Dogs, again"}`,
		"obj.json":   `{"V7":{"title":"Cats","thumbnail_url":"https://img.example/V7.jpg"},"V8":"Dogs, again"}`,
		"rows.json":  `[{"item_id":"V7","title":"Cats","thumbnail_url":"https://img.example/V7.jpg"},{"item_id":"V8","title":"Dogs, again"}]`,
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		src, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := src.Titles(context.Background(), []string{"V7", "V8", "V9"})
		wantCats := cats
		if !strings.Contains(body, "img.example") {
			wantCats.Thumbnail = ""
		}
		if err != nil || got["V7"] != wantCats || got["V8"] != dogs || len(got) != 2 {
			t.Fatalf("%s: %v %v", name, got, err)
		}
	}
	for name, body := range map[string]string{
		"one.csv":   "V7\n",
		"four.csv":  "V7,Cats,x,y\n",
		"bad.json":  `{"V7":7}`,
		"rows.json": `[{"item_id":"V7","title":7}]`,
	} {
		p := filepath.Join(dir, "bad-"+name)
		os.WriteFile(p, []byte(body), 0o644)
		src, err := Open(p)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := src.Titles(context.Background(), []string{"V7"}); err == nil || !strings.Contains(err.Error(), "titles file") {
			t.Fatalf("%s: got %v, %v; want an error naming the titles file", name, got, err)
		}
	}
	if _, err := Open(filepath.Join(dir, "missing.csv")); err == nil {
		t.Fatal("a missing titles file must be an error")
	}
}

// TestHTTPTitles: the endpoint may answer titles or {"title","thumbnail_url"} objects; answers
// are cached, so a second lookup of the same ids asks nothing.
func TestHTTPTitles(t *testing.T) {
	var asked []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked = append(asked, r.URL.Query().Get("ids"))
		w.Write([]byte(`{"V7":{"title":"Cats","thumbnail_url":"https://img.example/V7.jpg"},"V8":"Dogs"}`))
	}))
	defer srv.Close()
	src, err := Open(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		got, err := src.Titles(context.Background(), []string{"V7", "V8"})
		if err != nil || got["V7"] != (Meta{Title: "Cats", Thumbnail: "https://img.example/V7.jpg"}) || got["V8"] != (Meta{Title: "Dogs"}) {
			t.Fatalf("got %v, %v", got, err)
		}
	}
	if len(asked) != 1 || asked[0] != "V7,V8" {
		t.Fatalf("asked %q, want one request for V7,V8", asked)
	}
}

// TestHTTPTitlesInBatches: a list longer than one request's ids (the all-time base, 10 x K)
// is asked for in several requests of at most httpBatch ids, each id once, and every answer
// is used.
func TestHTTPTitlesInBatches(t *testing.T) {
	var asked [][]string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ids := strings.Split(r.URL.Query().Get("ids"), ",")
		asked = append(asked, ids)
		out := map[string]string{}
		for _, id := range ids {
			out[id] = "Title of " + id
		}
		b, _ := json.Marshal(out)
		w.Write(b)
	}))
	defer srv.Close()
	src := &HTTP{URL: srv.URL}
	ids := make([]string, 2*httpBatch+1)
	for i := range ids {
		ids[i] = fmt.Sprintf("V%d", i)
	}
	got, err := src.Titles(context.Background(), ids)
	if err != nil || len(got) != len(ids) || got["V0"].Title != "Title of V0" || got[ids[len(ids)-1]].Title != "Title of "+ids[len(ids)-1] {
		t.Fatalf("%d titles, %v", len(got), err)
	}
	var all []string
	for _, a := range asked {
		if len(a) > httpBatch {
			t.Errorf("a request of %d ids, want at most %d", len(a), httpBatch)
		}
		all = append(all, a...)
	}
	if len(asked) != 3 || !slices.Equal(all, ids) {
		t.Fatalf("%d requests of %d ids, want 3 asking for each of the %d ids once", len(asked), len(all), len(ids))
	}
}
