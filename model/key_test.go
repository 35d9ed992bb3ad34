package model

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestKeyNameRoundTrip(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, k := range []Key{{Window: "hour"}, {Window: "day", Start: start}, TopicsKey("eu", "surge"), TopicsKey("world", "volume"),
		{Window: "hour", Group: "eu"}, {Window: "day", Start: start, Group: "ap south"}} {
		got, ok := ParseName(k.Name())
		got.Start = k.Start
		if !ok || got != k {
			t.Errorf("ParseName(%q) = %+v, %v; want %+v", k.Name(), got, ok, k)
		}
	}
	if n := TopicsKey("eu", "surge").Name(); n != "topics/eu/surge" {
		t.Fatalf("topics name %q: the stored names must not change", n)
	}
	if n := (Key{Window: "hour", Group: "eu"}).Name(); n != "hour/eu" {
		t.Fatalf("group list name %q, want hour/eu", n)
	}
	for _, bad := range []string{"", "topics/eu", "topics//surge", "topics/eu/hot", "topics/e\x01u/surge", "topics/e/u/surge",
		"hour/", "hour/e\x7fu", "/eu", "hour/" + strings.Repeat("r", MaxGroupBytes+1)} {
		if k, ok := ParseName(bad); ok {
			t.Errorf("ParseName(%q) = %+v, want not ok", bad, k)
		}
	}
}

// TestNormalizeLegacyTopicsName: a list stored when the region and score were packed into the
// window reads back with the typed key.
func TestNormalizeLegacyTopicsName(t *testing.T) {
	var l List
	old := `{"window":"topics/eu/surge","as_of":"2026-12-01T10:00:00Z","version":3,"source":"speed","status":"live",` +
		`"items":[{"rank":1,"item_id":"#quake","views":300,"exact":false,"score":61,"no_history":true}]}`
	if err := json.Unmarshal([]byte(old), &l); err != nil {
		t.Fatal(err)
	}
	l = l.Normalize()
	if l.Key() != TopicsKey("eu", "surge") {
		t.Fatalf("key %+v, want the typed topics key", l.Key())
	}
	if it := l.Items[0]; it.Topic == nil || it.Score != 61 || !it.NoHistory {
		t.Fatalf("item %+v: want its topic fields", it)
	}
	if err := l.Validate(); err != nil {
		t.Fatal(err)
	}
}

// TestTopicInlineJSON: an item's topic fields are written inline, as before the typed
// extension, and only on topics items.
func TestTopicInlineJSON(t *testing.T) {
	b, err := json.Marshal(Item{Rank: 1, ItemID: "#quake", Views: 300, Topic: &Topic{Score: 61, Expected: 2, Review: true}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"rank":1,"item_id":"#quake","views":300,"exact":false,"score":61,"expected":2,"review":true}`; string(b) != want {
		t.Fatalf("%s, want %s", b, want)
	}
	b, _ = json.Marshal(Item{Rank: 1, ItemID: "V1", Views: 3})
	if want := `{"rank":1,"item_id":"V1","views":3,"exact":false}`; string(b) != want {
		t.Fatalf("%s, want %s", b, want)
	}
	var back Item
	if err := json.Unmarshal([]byte(`{"rank":1,"item_id":"V1","views":3,"exact":false}`), &back); err != nil || back.Topic != nil {
		t.Fatalf("an item of views read back with topic fields: %+v %v", back, err)
	}
	if !reflect.DeepEqual(back, Item{Rank: 1, ItemID: "V1", Views: 3}) {
		t.Fatalf("%+v", back)
	}
}

// TestValidateGroupLists: a list of one group value's views is valid on any window but the
// all-time base, with a well-formed group and no score.
func TestValidateGroupLists(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	base := func(k Key) List {
		l := List{Version: 1, Source: SourceSpeed, Status: StatusLive, Items: []Item{{Rank: 1, ItemID: "V1", Views: 3}}}
		l.SetKey(k)
		return l
	}
	for _, k := range []Key{{Window: "hour", Group: "eu"}, {Window: "all", Group: "us"}, {Window: "hour", Start: start, Group: "apac"}} {
		if err := base(k).Validate(); err != nil {
			t.Errorf("%v: %v", k, err)
		}
	}
	for k, want := range map[Key]string{
		{Window: "hour", Group: "e/u"}:            "group",
		{Window: "hour", Group: "e\x01u"}:         "group",
		{Window: "hour", Group: "eu", Score: "x"}: "only topics lists have a score",
		{Window: BaseWindow, Group: "eu"}:         "no group lists",
	} {
		l := base(k)
		if k.Window == BaseWindow {
			l.Source, l.Status, l.Exact, l.Boundary = SourceBatch, StatusExact, true, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
			l.Items[0].Exact = true
		}
		if err := l.Validate(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v: %v, want %q", k, err, want)
		}
	}
}

// TestListKind: a list's kind is what its key and fields say; a list stored without one reads
// as that kind (KindOf), and a kind that disagrees with the fields is invalid.
func TestListKind(t *testing.T) {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	items := func() []Item { return []Item{{Rank: 1, ItemID: "V1", Views: 3}} }
	for _, c := range []struct {
		name string
		l    List
		want ListKind
	}{
		{"items", List{Window: "hour", Items: items()}, ListItems},
		{"calendar", List{Window: "hour", Start: day, Items: items()}, ListItems},
		{"scored", List{Window: "now", HalfLifeSeconds: 3600, Items: []Item{{Rank: 1, ItemID: "V1", Views: 3, DecayedScore: 2.5}}}, ListScored},
		{"topics", List{Window: TopicsList, Group: "eu", Score: "surge", Items: []Item{{Rank: 1, ItemID: "#go", Views: 3, Topic: &Topic{Score: 2}}}}, ListTopics},
		{"since", List{Window: "all", Boundary: day, Cutoff: 2, Items: items()}, ListSince},
		{"frequent", List{Window: "hour", Frequent: true, Cutoff: 2, Items: []Item{{Rank: 1, ItemID: "V1", Views: 3, ViewsUpper: 4}}}, ListFrequent},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := c.l
			l.Version, l.Source, l.Status = 1, SourceSpeed, StatusLive
			if got := l.KindOf(); got != c.want {
				t.Fatalf("KindOf without a kind = %s, want %s", got, c.want)
			}
			l.Kind = c.want
			if err := l.Validate(); err != nil {
				t.Fatal(err)
			}
			for _, other := range ListKinds {
				if other == c.want {
					continue
				}
				l.Kind = other
				if err := l.Validate(); err == nil || !strings.Contains(err.Error(), "kind "+string(other)) {
					t.Errorf("kind %s on a %s list: %v, want an error naming the kind", other, c.want, err)
				}
			}
			l.Kind = "views"
			if err := l.Validate(); err == nil || !strings.Contains(err.Error(), `kind "views"`) {
				t.Errorf("unknown kind: %v", err)
			}
		})
	}
	both := List{Window: "hour", Frequent: true, Boundary: day, Version: 1, Source: SourceSpeed, Status: StatusLive}
	if err := both.Validate(); err == nil || !strings.Contains(err.Error(), "time boundary") {
		t.Errorf("frequent list with a boundary: %v", err)
	}
}
