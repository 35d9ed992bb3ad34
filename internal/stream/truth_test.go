package stream

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/model/topk"
)

// recount is the obvious, slow truth: a map per minute.
func recount(recs []Record) map[int64]map[string]uint64 {
	out := map[int64]map[string]uint64{}
	for _, r := range recs {
		if !r.Valid() {
			continue
		}
		m := floorDiv(r.Event.TS.UnixMilli(), 60_000)
		if out[m] == nil {
			out[m] = map[string]uint64{}
		}
		out[m][r.Event.ItemID] += uint64(r.Event.Count)
	}
	return out
}

func sumRange(rc map[int64]map[string]uint64, lo, hi int64) map[string]uint64 {
	out := map[string]uint64{}
	for m, c := range rc {
		if m >= lo && m < hi {
			for k, v := range c {
				out[k] += v
			}
		}
	}
	return out
}

// TestTruthEqualsRecount: every range of the Truth equals a recount of the
// records, including late events that land in frozen minutes.
func TestTruthEqualsRecount(t *testing.T) {
	cfg := shaped(3000, 400, 30, 15*time.Minute, 11, func(c *Config) {
		c.Late, c.LateBy, c.Malformed = 0.05, 4*time.Minute, 0.01
		c.Viral = []Viral{{Item: "Vv", At: 3 * time.Minute, Share: 0.2, For: 5 * time.Minute}}
	})
	recs := drain(t, cfg)
	tr := NewTruth()
	var views uint64
	for _, r := range recs {
		if r.Valid() {
			tr.Add(r.Event)
			views += uint64(r.Event.Count)
		}
	}
	if tr.Views() != views {
		t.Fatalf("Views %d, want %d", tr.Views(), views)
	}
	rc := recount(recs)
	start := DefaultStart.UnixMilli() / 60_000
	r := rand.New(rand.NewPCG(1, 1))
	for i := range 50 {
		lo := start - 5 + int64(r.IntN(25))
		hi := lo + int64(r.IntN(20))
		if i == 0 {
			lo, hi = start-10, start+30
		}
		got := tr.Range(minuteStart(lo), minuteStart(hi))
		want := sumRange(rc, lo, hi)
		if !reflect.DeepEqual(got.Map(), want) {
			t.Fatalf("Range(%s, %s) differs from the recount", minuteStart(lo), minuteStart(hi))
		}
		var total uint64
		for _, v := range want {
			total += v
		}
		if got.Total() != total || got.Len() != len(want) {
			t.Fatalf("Range total %d over %d items, want %d over %d", got.Total(), got.Len(), total, len(want))
		}
		wantTop := topk.TopK(10, want)
		if gotTop := got.Top(10); !reflect.DeepEqual(gotTop, wantTop) && len(wantTop) > 0 {
			t.Fatalf("Top(10) %v, want %v", gotTop, wantTop)
		}
	}
	// Sub-minute bounds round up to whole minutes.
	a := tr.Range(minuteStart(start+2).Add(-time.Second), minuteStart(start+4).Add(time.Second))
	if !reflect.DeepEqual(a.Map(), sumRange(rc, start+2, start+5)) {
		t.Fatal("Range with sub-minute bounds does not cover the minutes starting inside it")
	}
	if from, to := tr.Span(); !from.Equal(minuteStart(start-4)) || !to.Equal(minuteStart(start+15)) {
		t.Fatalf("Span %s..%s", from, to)
	}
}

func TestTruthFileRoundTrip(t *testing.T) {
	recs := drain(t, smallConfig())
	tr := NewTruth()
	for _, r := range recs {
		if r.Valid() {
			tr.Add(r.Event)
		}
	}
	var buf bytes.Buffer
	n, err := tr.WriteTo(&buf)
	if err != nil || n != int64(buf.Len()) {
		t.Fatalf("WriteTo: %d, %v (buffer %d)", n, err, buf.Len())
	}
	back, err := ReadTruth(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if back.Views() != tr.Views() {
		t.Fatalf("views %d after reading, want %d", back.Views(), tr.Views())
	}
	var again bytes.Buffer
	if _, err := back.WriteTo(&again); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Fatal("write, read, write gives different bytes")
	}
	from, to := tr.Span()
	if !reflect.DeepEqual(back.Range(from, to).Map(), tr.Range(from, to).Map()) {
		t.Fatal("the read truth sums differently")
	}
	first, _, _ := strings.Cut(buf.String(), "\n")
	if !strings.HasPrefix(first, `{"minute":"2025-12-31T23:58:00Z","counts":{"V`) { // late events reach back 2m
		t.Fatalf("first line %q", first)
	}
}

func TestReadTruthRejects(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"not JSON", "hello\n", "line 1"},
		{"unknown field", `{"minute":"2026-01-01T00:00:00Z","counts":{"V1":1},"x":1}`, "unknown field"},
		{"not a minute", `{"minute":"2026-01-01T00:00:30Z","counts":{"V1":1}}`, "whole minute"},
		{"not UTC", `{"minute":"2026-01-01T01:00:00+01:00","counts":{"V1":1}}`, "whole minute"},
		{"bad time", `{"minute":"yesterday","counts":{"V1":1}}`, "minute"},
		{"out of order", `{"minute":"2026-01-01T00:01:00Z","counts":{"V1":1}}` + "\n" + `{"minute":"2026-01-01T00:00:00Z","counts":{"V1":1}}`, "line 2"},
		{"twice", `{"minute":"2026-01-01T00:01:00Z","counts":{"V1":1}}` + "\n" + `{"minute":"2026-01-01T00:01:00Z","counts":{"V1":1}}`, "not after"},
		{"zero", `{"minute":"2026-01-01T00:00:00Z","counts":{"V1":0}}`, "count 0"},
		{"negative", `{"minute":"2026-01-01T00:00:00Z","counts":{"V1":-1}}`, "line 1"},
		{"empty item", `{"minute":"2026-01-01T00:00:00Z","counts":{"":1}}`, "item_id"},
		{"no counts", `{"minute":"2026-01-01T00:00:00Z"}`, "no counts"},
		{"before 2000", `{"minute":"1999-01-01T00:00:00Z","counts":{"V1":1}}`, "ts"},
		{"region first", `{"minute":"2026-01-01T00:00:00Z","region":"eu","counts":{"V1":1}}`, "follows its minute's line"},
		{"region of another minute", `{"minute":"2026-01-01T00:00:00Z","counts":{"V1":1}}` + "\n" + `{"minute":"2026-01-01T00:01:00Z","region":"eu","counts":{"V1":1}}`, "follows its minute's line"},
		{"regions out of order", `{"minute":"2026-01-01T00:00:00Z","counts":{"V1":2}}` + "\n" + `{"minute":"2026-01-01T00:00:00Z","region":"us","counts":{"V1":1}}` + "\n" + `{"minute":"2026-01-01T00:00:00Z","region":"eu","counts":{"V1":1}}`, "regions in order"},
		{"bad region", `{"minute":"2026-01-01T00:00:00Z","counts":{"V1":2}}` + "\n" + `{"minute":"2026-01-01T00:00:00Z","region":"e\nu","counts":{"V1":1}}`, "region"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ReadTruth(strings.NewReader(c.in))
			if !errors.Is(err, ErrTruthFormat) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrTruthFormat mentioning %q", err, c.want)
			}
		})
	}
	if tr, err := ReadTruth(strings.NewReader("")); err != nil || tr.Views() != 0 {
		t.Fatalf("empty file: %v, %v", tr, err)
	}
}

func FuzzReadTruth(f *testing.F) {
	f.Add([]byte(`{"minute":"2026-01-01T00:00:00Z","counts":{"V1":3,"V2":1}}` + "\n"))
	f.Add([]byte(`{"minute":"2026-01-01T00:00:00Z","counts":{"V1":18446744073709551615}}` + "\n" + `{"minute":"2026-01-01T00:01:00Z","counts":{"V1":1}}`))
	f.Add([]byte(`{"minute":"2026-01-01T00:00:00Z","counts":{"\u00e9":1}} {"minute":"2026-01-01T00:02:00Z","counts":{}}`))
	f.Add([]byte(`{"minute":"2026-01-01T00:00:00Z","counts":{}}` + "\n" + `{"minute":"2026-01-01T00:00:00Z","region":"eu","counts":{"V1":1}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tr, err := ReadTruth(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrTruthFormat) {
				t.Fatalf("error %v does not wrap ErrTruthFormat", err)
			}
			return
		}
		// Whatever it accepts writes canonically and reads back the same.
		var w1, w2 bytes.Buffer
		if _, err := tr.WriteTo(&w1); err != nil {
			t.Fatal(err)
		}
		back, err := ReadTruth(bytes.NewReader(w1.Bytes()))
		if err != nil {
			t.Fatalf("rereading our own output: %v\n%s", err, w1.Bytes())
		}
		if _, err := back.WriteTo(&w2); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(w1.Bytes(), w2.Bytes()) || back.Views() != tr.Views() {
			t.Fatal("the canonical form does not round-trip")
		}
	})
}

// TestPartitionOfMatchesKafkaGo: the harness must put each item in the
// partition the producer's writer does.
func TestPartitionOfMatchesKafkaGo(t *testing.T) {
	h := &kafka.Hash{}
	for _, n := range []int{1, 3, 8, 32, 320} {
		parts := make([]int, n)
		for i := range parts {
			parts[i] = i
		}
		for i := range 2000 {
			key := "V" + strconv.Itoa(i)
			if i%7 == 0 {
				key = strings.Repeat("é", i%13) + key
			}
			if got, want := PartitionOf(key, n), h.Balance(kafka.Message{Key: []byte(key)}, parts...); got != want {
				t.Fatalf("PartitionOf(%q, %d) = %d, kafka-go says %d", key, n, got, want)
			}
		}
	}
}

func BenchmarkTruthAdd(b *testing.B) {
	g, _ := NewGenerator(DefaultConfig())
	recs, _ := g.NextSecond(nil)
	tr := NewTruth()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		ev := recs[i%len(recs)].Event
		ev.TS = ev.TS.Add(time.Duration(i/len(recs)) * time.Second)
		tr.Add(ev)
		i++
	}
}

// TestRegions: a stream with regions gives the same views as without (only the events' region
// differs), each server's events carry its region, so shares follow the servers, and the
// Truth of each region holds exactly its events and survives the file.
func TestRegions(t *testing.T) {
	c := smallConfig()
	plain := drain(t, c)
	c.Regions = []string{"eu", "eu", "us", "apac"}
	recs := drain(t, c)
	if len(recs) != len(plain) {
		t.Fatalf("%d records with regions, %d without", len(recs), len(plain))
	}
	tr := NewTruth()
	byRegion := map[string]map[string]uint64{}
	var views [2]uint64
	for i, r := range recs {
		p := plain[i]
		if r.Key != p.Key || r.Valid() != p.Valid() || (r.Valid() && (r.Event.ItemID != p.Event.ItemID || r.Event.Count != p.Event.Count || !r.Event.TS.Equal(p.Event.TS))) {
			t.Fatalf("record %d: %+v with regions, %+v without", i, r, p)
		}
		if !r.Valid() {
			continue
		}
		if r.Event.Region == "" || p.Event.Region != "" {
			t.Fatalf("record %d: region %q (%q without)", i, r.Event.Region, p.Event.Region)
		}
		tr.Add(r.Event)
		if byRegion[r.Event.Region] == nil {
			byRegion[r.Event.Region] = map[string]uint64{}
		}
		byRegion[r.Event.Region][r.Event.ItemID] += uint64(r.Event.Count)
		if r.Event.Region == "eu" {
			views[0] += uint64(r.Event.Count)
		} else {
			views[1] += uint64(r.Event.Count)
		}
	}
	if got := strings.Join(tr.Regions(), ","); got != "apac,eu,us" {
		t.Fatalf("regions %s", got)
	}
	// eu is listed twice of four: half the 50 servers, about half the views.
	if share := float64(views[0]) / float64(views[0]+views[1]); share < 0.4 || share > 0.6 {
		t.Errorf("eu has %.2f of the views with half the servers", share)
	}
	var buf bytes.Buffer
	if _, err := tr.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadTruth(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	from, to := tr.Span()
	for _, r := range []string{"eu", "us", "apac"} {
		if got := tr.Region(r).Range(from, to).Map(); !reflect.DeepEqual(got, byRegion[r]) {
			t.Errorf("%s: the truth %d items, recount %d", r, len(got), len(byRegion[r]))
		}
		if !reflect.DeepEqual(back.Region(r).Range(from, to).Map(), byRegion[r]) {
			t.Errorf("%s: the truth read from its file differs", r)
		}
	}
	if tr.Region("mars").Views() != 0 || len(tr.Region("eu").Regions()) != 0 {
		t.Error("an unknown region has views, or a region has regions")
	}
	for _, bad := range [][]string{{""}, {"e\nu"}} {
		c.Regions = bad
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "Regions") {
			t.Errorf("regions %q: %v", bad, err)
		}
	}
}
