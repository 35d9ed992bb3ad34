package model_test

import (
	"encoding/json"
	"reflect"
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
