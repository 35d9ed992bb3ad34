package titles

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"trending/internal/setting"
	"trending/model"
)

// scripted is a source whose answers the test sets: the metadata it knows, or a failure;
// it records the ids it was asked for.
type scripted struct {
	mu    sync.Mutex
	meta  map[string]Meta
	fail  bool
	asked [][]string
}

func (s *scripted) Titles(_ context.Context, ids []string) (map[string]Meta, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.asked = append(s.asked, ids)
	if s.fail {
		return nil, errors.New("metadata store down")
	}
	out := map[string]Meta{}
	for _, id := range ids {
		if m, ok := s.meta[id]; ok {
			out[id] = m
		}
	}
	return out, nil
}

func list(ids ...string) model.List {
	l := model.List{Window: "hour"}
	for i, id := range ids {
		l.Items = append(l.Items, model.Item{Rank: i + 1, ItemID: id, Views: uint64(100 - i)})
	}
	return l
}

func metaOf(l model.List) string {
	var b strings.Builder
	for _, it := range l.Items {
		b.WriteString(it.ItemID + "=" + it.Title + "|" + it.Thumbnail + " ")
	}
	return strings.TrimSpace(b.String())
}

// TestAttacherRules: the merger's rules, now every writer's: an item gets what the source
// says; when a lookup fails every item keeps its last known metadata (an item never described
// gets none), the failure counted; a successful lookup that no longer describes an item takes
// its metadata away; counts and ranks are not touched.
func TestAttacherRules(t *testing.T) {
	src := &scripted{meta: map[string]Meta{"V1": {Title: "Cats", Thumbnail: "/v1.jpg"}, "V2": {Title: "Dogs"}}}
	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	cfg.Source, cfg.Registry = src, reg
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	steps := []struct {
		name  string
		fail  bool
		meta  map[string]Meta // the source's metadata from this step on; nil keeps it
		items []string
		want  string
	}{
		{"lookup", false, nil, []string{"V1", "V2", "V3"}, "V1=Cats|/v1.jpg V2=Dogs| V3=|"},
		{"source down: the last known metadata", true, nil, []string{"V2", "V1", "V4"}, "V2=Dogs| V1=Cats|/v1.jpg V4=|"},
		{"source back with new metadata", false, map[string]Meta{"V1": {Title: "Cats 2"}, "V4": {Title: "Birds"}}, []string{"V1", "V2", "V4"}, "V1=Cats 2| V2=| V4=Birds|"},
		{"down again: the newest known", true, nil, []string{"V4", "V1", "V2"}, "V4=Birds| V1=Cats 2| V2=|"},
	}
	failures := 0
	for _, s := range steps {
		src.mu.Lock()
		src.fail = s.fail
		if s.meta != nil {
			src.meta = s.meta
		}
		src.mu.Unlock()
		if s.fail {
			failures++
		}
		l := list(s.items...)
		a.Attach(ctx, &l)
		if got := metaOf(l); got != s.want {
			t.Errorf("%s: %s, want %s", s.name, got, s.want)
		}
		for i, it := range l.Items {
			if it.ItemID != s.items[i] || it.Rank != i+1 || it.Views != uint64(100-i) {
				t.Errorf("%s: item %d changed to %+v", s.name, i, it)
			}
		}
		if got := counter(t, reg, "trending_title_failures_total"); got != float64(failures) {
			t.Errorf("%s: trending_title_failures_total %v, want %d", s.name, got, failures)
		}
	}
	// Every lookup asked for exactly the list's items.
	for i, s := range steps {
		if strings.Join(src.asked[i], ",") != strings.Join(s.items, ",") {
			t.Errorf("%s: asked %v, want %v", s.name, src.asked[i], s.items)
		}
	}
	empty := model.List{Window: "hour"}
	a.Attach(ctx, &empty)
	if len(src.asked) != len(steps) {
		t.Errorf("an empty list asked the source")
	}
}

// TestAttacherShared: writers attaching at once (the merger and the batch of up) see one
// memory: what one lookup learned, another list shows when the source fails.
func TestAttacherShared(t *testing.T) {
	src := &scripted{meta: map[string]Meta{}}
	for i := range 200 {
		id := "V" + string(rune('A'+i%26)) + strings.Repeat("x", i/26)
		src.meta[id] = Meta{Title: "T " + id}
	}
	cfg := DefaultConfig()
	cfg.Source = src
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for id := range src.meta {
		ids = append(ids, id)
	}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := list(ids[w*25 : w*25+25]...)
			a.Attach(context.Background(), &l)
		}()
	}
	wg.Wait()
	src.fail = true
	l := list(ids...)
	a.Attach(context.Background(), &l)
	for _, it := range l.Items {
		if it.Title != "T "+it.ItemID {
			t.Fatalf("%s: title %q after the source failed, want the one another writer's lookup learned", it.ItemID, it.Title)
		}
	}
}

func TestAttacherConfig(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, setting.ErrConfig) || !strings.Contains(err.Error(), "Source") {
		t.Fatalf("no source: %v, want a setting error naming Source", err)
	}
	a, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	l := list("V1")
	l.Items[0].Title = "stale"
	a.Attach(context.Background(), &l)
	if l.Items[0].Title != "" {
		t.Fatalf("no titles configured: %q", l.Items[0].Title)
	}
	for _, spec := range []string{"", "http://127.0.0.1:1/titles"} {
		if _, err := Open(spec); err != nil {
			t.Errorf("%q: %v", spec, err)
		}
	}
	if _, err := Open("/does/not/exist.csv"); !errors.Is(err, setting.ErrConfig) {
		t.Errorf("a missing file: %v, want a setting error", err)
	}
}

// counter reads a counter of the registry (-1 when it is not there).
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return -1
}
