package main

import (
	"strings"
	"testing"
	"time"
)

var hour = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// TestCompareHour runs the comparison on a made-up hour: two partitions' final lists (with
// noise around them: another window, an open list, an older final, the next hour), Flink's
// CSV rows and the truth's minutes agree; each change of one count or item is a difference.
func TestCompareHour(t *testing.T) {
	h := newHourFinals(hour)
	msgs := []string{
		`{"window":"hour","start":"2026-12-01T10:00:00Z","partition":0,"version":1,"exact":true,"items":[{"Item":"a","Count":1}]}`,
		`{"window":"hour","start":"2026-12-01T10:00:00Z","final":true,"partition":0,"version":2,"exact":true,"items":[{"Item":"a","Count":4}]}`,
		`{"window":"hour","start":"2026-12-01T10:00:00Z","final":true,"partition":0,"version":3,"exact":true,"items":[{"Item":"a","Count":5},{"Item":"c","Count":2}]}`,
		`{"window":"hour","start":"2026-12-01T10:00:00Z","final":true,"partition":1,"version":3,"exact":true,"items":[{"Item":"b","Count":5},{"Item":"d","Count":1}]}`,
		`{"window":"hour","start":"2026-12-01T11:00:00Z","final":true,"partition":1,"version":4,"exact":true,"items":[{"Item":"b","Count":9}]}`,
		`{"window":"hour","partition":1,"version":4,"exact":true,"items":[{"Item":"b","Count":50}]}`,
		`{"window":"day","start":"2026-12-01T00:00:00Z","final":true,"partition":1,"version":4,"exact":true,"items":[{"Item":"b","Count":7}]}`,
	}
	for _, m := range msgs {
		if err := h.add([]byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	got, err := h.merge(2, 3)
	if err != nil {
		t.Fatal(err)
	}
	want := []entry{{"a", 5}, {"b", 5}, {"c", 2}}
	if d := diff("merged", got, "want", want); d != "" {
		t.Fatalf("merge: %s", d)
	}
	if _, err := h.merge(3, 3); err == nil {
		t.Fatal("merge of 3 partitions with 2 lists: no error")
	}

	csv := "window_end,rank,item,count\n" +
		"2026-12-01T10:59:00Z,1,a,4\n" +
		"2026-12-01T11:00:00Z,2,b,5\n" +
		"2026-12-01T11:00:00Z,1,a,5\n" +
		"2026-12-01T11:00:00Z,3,c,2\n" +
		"2026-12-01T11:01:00Z,1,b,6\n"
	fl, err := flinkWindow(strings.NewReader(csv), hour.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if d := diff("flink", fl, "merged", got); d != "" {
		t.Fatalf("flink: %s", d)
	}
	if _, err := flinkWindow(strings.NewReader("window_end,rank,item,count\n2026-12-01T11:00:00Z,2,b,5\n"), hour.Add(time.Hour)); err == nil {
		t.Fatal("a window with rank 2 alone: no error")
	}

	truth := `{"minute":"2026-12-01T09:59:00Z","counts":{"d":100}}
{"minute":"2026-12-01T10:00:00Z","counts":{"a":3,"b":5,"d":1}}
{"minute":"2026-12-01T10:59:00Z","counts":{"a":2,"c":2}}
{"minute":"2026-12-01T11:00:00Z","counts":{"d":100}}
`
	tc, err := truthHour(strings.NewReader(truth), hour)
	if err != nil {
		t.Fatal(err)
	}
	if d := diff("truth", topK(tc, 3), "merged", got); d != "" {
		t.Fatalf("truth: %s", d)
	}

	for _, bad := range [][]entry{
		{{"a", 5}, {"b", 5}, {"c", 3}},
		{{"b", 5}, {"a", 5}, {"c", 2}},
		{{"a", 5}, {"b", 5}},
		{{"a", 5}, {"b", 5}, {"d", 2}},
		nil,
	} {
		if diff("bad", bad, "merged", got) == "" {
			t.Errorf("%v and %v compare equal", bad, got)
		}
	}
	if diff("a", nil, "b", nil) == "" {
		t.Error("two empty lists compare equal")
	}
}
