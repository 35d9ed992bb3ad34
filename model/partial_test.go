package model_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"trending/model"
	"trending/model/topk"
)

// TestDecodePartialAsEncodingJSON: DecodePartial (goccy/go-json) reads every field of every
// kind of partial exactly as encoding/json does, and refuses what encoding/json refuses.
func TestDecodePartialAsEncodingJSON(t *testing.T) {
	at := time.Date(2026, 11, 14, 10, 6, 30, 123e6, time.UTC)
	items := []topk.Entry{{Item: "video-1", Count: 1 << 40}, {Item: `q"u\ote ü`, Count: 7}, {Item: "v#3", Count: 0}}
	cases := map[string]model.Partial{
		"live": {Window: "hour", Partition: 3, AsOf: at, WindowStart: at.Add(-time.Hour), Version: at.UnixMilli(), Exact: true, Total: 99, Items: items},
		"calendar final sketch": {Window: "day", Start: model.Day.Align(at), End: model.Day.Next(model.Day.Align(at)), Final: true, DroppedLate: 12,
			Partition: 0, AsOf: at, Version: at.UnixMilli(), Bound: &model.Bound{MaxOvercount: 1620.5, Probability: 0.993}, Items: items},
		"late only": {Window: "hour", Start: model.Hour.Align(at), LateOnly: true, DroppedLate: 5, Partition: 31, AsOf: at, Version: at.UnixMilli()},
		"topics": {Window: model.TopicsKey("eu", "surge").Name(), Partition: 2, AsOf: at, Version: at.UnixMilli(), Limit: 20,
			Topics: []model.Item{{Rank: 1, ItemID: "#go", Views: 40, Topic: &model.Topic{Score: 2.5, Expected: 1.25, NewShare: 0.1}}}},
		"salted": {Window: "hour", Partition: 2, AsOf: at, Version: at.UnixMilli(), Exact: true, Items: items,
			Salted: []model.SaltedCount{{Item: "hot", Count: 1 << 33}, {Item: `q"u`, Count: 1}}},
		"group sketch": {Window: "month", Partition: 5, AsOf: at, Version: at.UnixMilli(), Bound: &model.Bound{MaxOvercount: 40, Probability: 0.99}, Items: items,
			Salted:  []model.SaltedCount{{Item: "hot", Count: 90, Over: 120.5, Sketches: 3}},
			Members: []model.Member{{Partition: 5, Version: at.UnixMilli()}, {Partition: 13, Version: at.UnixMilli() - 1000}}},
		"decayed": {Window: "now", Partition: 4, AsOf: at, Version: at.UnixMilli(), Exact: true, Total: 12, HalfLifeSeconds: 3600,
			Scored:       []topk.Scored{{Item: "video-1", Score: 9.000000000000002}, {Item: `q"u\ote ü`, Score: 1e-300}, {Item: "v#3", Score: 0.1 + 0.2}},
			SaltedScored: []model.SaltedScore{{Item: "hot", Score: 1.0 / 3}, {Item: "x", Score: 2.5, Over: 0.7, Sketches: 2}}},
		"all since": {Window: model.SinceWindow, Partition: 1, AsOf: at, Version: at.UnixMilli(), Exact: true, Items: items,
			Boundary: model.Day.Align(at), From: model.Day.Align(at).Add(-time.Hour), BaseVersion: 17, Base: items[:1], Cutoff: 3},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := p.Encode()
			if err != nil {
				t.Fatal(err)
			}
			var want model.Partial
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatal(err)
			}
			got, err := model.DecodePartial(b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("DecodePartial:\n%+v\nencoding/json:\n%+v", got, want)
			}
		})
	}
	for _, bad := range []string{``, `{`, `[]`, `{"window":"hour","partition":1,"version":1,"items":[{"Item":1}]}`,
		`{"window":"hour","partition":1,"version":1,"as_of":"yesterday"}`, `{"window":"","partition":1,"version":1}`,
		`{"window":"hour","partition":-1,"version":1}`, `{"window":"hour","partition":1,"version":0}`} {
		if _, err := model.DecodePartial([]byte(bad)); err == nil {
			t.Errorf("DecodePartial(%q): no error", bad)
		}
	}
}

// TestPartialKind: a partial says which list it carries; one without a kind (an older
// producer) is read as readers inferred it before (window, topics name, half-life), and
// Validate refuses a kind its fields contradict.
func TestPartialKind(t *testing.T) {
	at := time.Date(2026, 11, 14, 10, 6, 30, 0, time.UTC)
	v := at.UnixMilli()
	items := []topk.Entry{{Item: "a", Count: 3}}
	topics := model.TopicsKey("eu", "surge").Name()
	cases := []struct {
		name string
		p    model.Partial
		want model.PartialKind
	}{
		{"counts", model.Partial{Window: "hour", Partition: 1, Version: v, Items: items}, model.PartialItems},
		{"late only", model.Partial{Window: "day", Start: model.Day.Align(at), LateOnly: true, DroppedLate: 2, Partition: 1, Version: v}, model.PartialItems},
		{"group", model.Partial{Window: model.Key{Window: "hour", Group: "eu"}.Name(), Partition: 1, Version: v, Items: items}, model.PartialItems},
		{"decayed", model.Partial{Window: "now", Partition: 1, Version: v, HalfLifeSeconds: 3600, Scored: []topk.Scored{{Item: "a", Score: 1}}}, model.PartialScored},
		{"topics", model.Partial{Window: topics, Partition: 1, Version: v, Topics: []model.Item{{Rank: 1, ItemID: "#go"}}}, model.PartialTopics},
		{"since", model.Partial{Window: model.SinceWindow, Partition: 1, Version: v, Items: items, Boundary: model.Day.Align(at), Cutoff: 1}, model.PartialSince},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.p.KindOf(); got != c.want {
				t.Fatalf("KindOf() = %q, want %q", got, c.want)
			}
			old, err := c.p.Encode() // an older producer's message: no kind
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(old), `"kind"`) {
				t.Fatalf("a partial without a kind encodes one: %s", old)
			}
			p, err := model.DecodePartial(old)
			if err != nil || p.Kind != "" || p.KindOf() != c.want {
				t.Fatalf("old message %s: kind %q, KindOf %q (%v)", old, p.Kind, p.KindOf(), err)
			}
			c.p.Kind = c.want
			b, err := c.p.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), `"kind":"`+string(c.want)+`"`) {
				t.Fatalf("encoded without its kind: %s", b)
			}
			if p, err = model.DecodePartial(b); err != nil || p.Kind != c.want {
				t.Fatalf("decoded kind %q (%v)", p.Kind, err)
			}
			for _, other := range model.PartialKinds {
				if other == c.want {
					continue
				}
				q := c.p
				q.Kind = other
				if err := q.Validate(); err == nil {
					t.Errorf("a %s partial said to be %s: valid", c.want, other)
				}
			}
		})
	}
	bad := map[string]model.Partial{
		"unknown kind":       {Kind: "ranked", Window: "hour", Partition: 1, Version: v, Items: items},
		"counts and scores":  {Window: "hour", Partition: 1, Version: v, Items: items, Scored: []topk.Scored{{Item: "a", Score: 1}}},
		"scores and counts":  {Window: "now", Partition: 1, Version: v, HalfLifeSeconds: 60, Items: items},
		"topics with counts": {Window: topics, Partition: 1, Version: v, Items: items},
		"counts with topics": {Window: "hour", Partition: 1, Version: v, Topics: []model.Item{{Rank: 1, ItemID: "#go"}}},
		"since late only":    {Window: model.SinceWindow, Partition: 1, Version: v, LateOnly: true},
		"counts with a base": {Window: "hour", Partition: 1, Version: v, Items: items, Base: items},
		"no version":         {Kind: model.PartialItems, Window: "hour", Partition: 1, Items: items},
	}
	for name, p := range bad {
		if err := p.Validate(); err == nil {
			t.Errorf("%s: valid", name)
		}
		b, _ := p.Encode()
		if _, err := model.DecodePartial(b); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}
