package stream

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"trending/internal/setting"
	"trending/model/event"
)

// drain generates every second of cfg.
func drain(t testing.TB, cfg Config) []Record {
	t.Helper()
	g, err := NewGenerator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out []Record
	for {
		var ok bool
		if out, ok = g.NextSecond(out); !ok {
			return out
		}
	}
}

func smallConfig() Config {
	return shaped(5000, 3000, 50, 20*time.Second, 9, func(c *Config) {
		c.Late, c.Malformed = 0.02, 0.01
		c.Viral = []Viral{{Item: "Vhot", At: 5 * time.Second, Share: 0.3, For: 10 * time.Second}}
	})
}

// shaped is DefaultConfig with the catalog, rate, servers, duration and seed given, then
// mod (if not nil) applied.
func shaped(items int, rate float64, servers int, d time.Duration, seed uint64, mod func(*Config)) Config {
	c := DefaultConfig()
	c.Items, c.Rate, c.Servers, c.Duration, c.Seed = items, rate, servers, d, seed
	if mod != nil {
		mod(&c)
	}
	return c
}

func TestGeneratorDeterministic(t *testing.T) {
	a, b := drain(t, smallConfig()), drain(t, smallConfig())
	if !reflect.DeepEqual(a, b) {
		t.Fatal("two generators with the same config produced different streams")
	}
	other := smallConfig()
	other.Seed++
	if reflect.DeepEqual(a, drain(t, other)) {
		t.Fatal("a different seed produced the same stream")
	}
}

// TestPreSumming checks the pre-summing: every view is in exactly one
// event, an event is one (item, server, second), so events never outnumber
// views and a second's events never exceed items x servers.
func TestPreSumming(t *testing.T) {
	cfg := shaped(200, 5000.5, 20, 10*time.Second, 3, nil)
	g, _ := NewGenerator(cfg)
	var views, events uint64
	for sec := 0; ; sec++ {
		recs, ok := g.NextSecond(nil)
		if !ok {
			break
		}
		type key struct {
			item string
			ms   int
		}
		seen := map[key]bool{}
		var secViews uint64
		for _, r := range recs {
			ev := r.Event
			k := key{ev.ItemID, ev.TS.Nanosecond() / 1e6} // a server's millisecond
			if seen[k] && cfg.Servers <= 1000 {
				t.Fatalf("second %d: item %s twice from the server at ms %d: not pre-summed", sec, ev.ItemID, k.ms)
			}
			seen[k] = true
			if ev.TS.Truncate(time.Second) != DefaultStart.Add(time.Duration(sec)*time.Second) {
				t.Fatalf("event at %s in second %d", ev.TS, sec)
			}
			secViews += uint64(ev.Count)
			events++
		}
		// 5000.5 views a second: 5000 then 5001, alternating.
		if want := uint64(5000 + sec%2); secViews != want {
			t.Fatalf("second %d: %d views, want %d", sec, secViews, want)
		}
		if len(recs) > cfg.Items*cfg.Servers {
			t.Fatalf("second %d: %d events > items x servers", sec, len(recs))
		}
		views += secViews
	}
	if views != 50_005 || events >= views {
		t.Fatalf("%d views in %d events: want 50,005 views in fewer events", views, events)
	}
}

// TestPreSummingSplitsAtMaxCount: one item on one server above the event's
// count limit becomes several valid events.
func TestPreSummingSplitsAtMaxCount(t *testing.T) {
	recs := drain(t, shaped(1, 2_500_000, 1, time.Second, 0, nil))
	var sum uint64
	for _, r := range recs {
		if err := r.Event.Validate(); err != nil {
			t.Fatal(err)
		}
		sum += uint64(r.Event.Count)
	}
	if len(recs) != 3 || sum != 2_500_000 {
		t.Fatalf("%d events summing to %d, want 3 summing to 2,500,000", len(recs), sum)
	}
}

func TestViralShare(t *testing.T) {
	cfg := shaped(10_000, 20_000, 100, 30*time.Second, 5, func(c *Config) {
		c.Viral = []Viral{{Item: "Vnew", At: 10 * time.Second, Share: 0.3, For: 10 * time.Second, Ramp: 4 * time.Second}}
	})
	g, _ := NewGenerator(cfg)
	for sec := 0; ; sec++ {
		recs, ok := g.NextSecond(nil)
		if !ok {
			break
		}
		var all, viral float64
		for _, r := range recs {
			all += float64(r.Event.Count)
			if r.Event.ItemID == "Vnew" {
				viral += float64(r.Event.Count)
			}
		}
		want := cfg.Viral[0].ShareAt(time.Duration(sec) * time.Second)
		sd := math.Sqrt(want*(1-want)/all) + 1e-9
		if got := viral / all; math.Abs(got-want) > 5*sd {
			t.Errorf("second %d: viral share %.4f, want %.4f", sec, got, want)
		}
	}
}

func TestLateEvents(t *testing.T) {
	cfg := shaped(1000, 10_000, 200, 10*time.Second, 2, func(c *Config) { c.Late, c.LateBy = 0.1, 3*time.Minute })
	recs := drain(t, cfg)
	late := 0
	for _, r := range recs {
		sec := r.Event.TS
		if r.Late {
			late++
			sec = sec.Add(cfg.LateBy)
		}
		if sec.Before(DefaultStart) || !sec.Before(DefaultStart.Add(cfg.Duration)) {
			t.Fatalf("event at %s (late %v) outside the stream", r.Event.TS, r.Late)
		}
	}
	frac := float64(late) / float64(len(recs))
	if math.Abs(frac-0.1) > 5*math.Sqrt(0.1*0.9/float64(len(recs))) {
		t.Fatalf("late fraction %.4f, want 0.1", frac)
	}
}

// TestZeroMeansZero: DefaultConfig holds the defaults and NewGenerator takes it; a zero
// field that cannot work is refused by name instead of taking the default; a zero LateBy
// or ItemPrefix means what it says.
func TestZeroMeansZero(t *testing.T) {
	if _, err := NewGenerator(DefaultConfig()); err != nil {
		t.Fatalf("NewGenerator(DefaultConfig()) = %v", err)
	}
	for field, zero := range map[string]func(*Config){
		"Items":   func(c *Config) { c.Items = 0 },
		"Zipf":    func(c *Config) { c.Zipf = 0 },
		"Rate":    func(c *Config) { c.Rate = 0 },
		"Servers": func(c *Config) { c.Servers = 0 },
		"Start":   func(c *Config) { c.Start = time.Time{} },
	} {
		c := DefaultConfig()
		zero(&c)
		_, err := NewGenerator(c)
		es := setting.Errors(err)
		if !errors.Is(err, ErrConfig) || !errors.Is(err, setting.ErrConfig) || len(es) != 1 || es[0].Field != field {
			t.Errorf("%s 0: NewGenerator = %v, want one setting error naming %s", field, err, field)
		}
	}

	cfg := shaped(50, 200, 5, 3*time.Second, 1, func(c *Config) { c.Late, c.LateBy, c.ItemPrefix = 1, 0, "" })
	recs := drain(t, cfg)
	if len(recs) == 0 {
		t.Fatal("no records")
	}
	for _, r := range recs {
		if !r.Late {
			t.Fatalf("Late 1: record %+v not late", r)
		}
		if r.Event.TS.Before(DefaultStart) {
			t.Fatalf("LateBy 0: late event at %s, before the start: shifted by a default instead of 0", r.Event.TS)
		}
		if r.Event.ItemID == "" || strings.HasPrefix(r.Event.ItemID, "V") {
			t.Fatalf("ItemPrefix \"\": item %q, want a bare rank", r.Event.ItemID)
		}
	}
}

// TestMalformedKinds checks each kind is rejected by the real decoder for
// the reason it claims, and that the valid events all decode unchanged.
func TestMalformedKinds(t *testing.T) {
	ev := event.Event{ItemID: "V42", Count: 17, TS: DefaultStart.Add(1234 * time.Millisecond)}
	valid := ev.AppendJSON(nil)
	for _, k := range MalformedKinds() {
		t.Run(k.Name, func(t *testing.T) {
			raw := k.make(bytes.Clone(valid), ev)
			_, err := event.Decode(raw)
			if got := event.ReasonOf(err); got != k.Reason {
				t.Fatalf("Decode(%q) reason %q (%v), want %q", raw, got, err, k.Reason)
			}
		})
	}
}

func TestMalformedStream(t *testing.T) {
	cfg := smallConfig()
	cfg.Malformed = 0.05
	recs := drain(t, cfg)
	bad, good := 0, 0
	reasons := map[event.Reason]int{}
	for _, r := range recs {
		if r.Valid() {
			good++
			got, err := event.Decode(r.Event.AppendJSON(nil))
			if err != nil || got.ItemID != r.Event.ItemID || got.Count != r.Event.Count || !got.TS.Equal(r.Event.TS) {
				t.Fatalf("valid event %+v decodes to %+v, %v", r.Event, got, err)
			}
			continue
		}
		bad++
		if _, err := event.Decode(r.Raw); event.ReasonOf(err) != r.Reason {
			t.Fatalf("malformed %q: reason %q, want %q", r.Raw, event.ReasonOf(err), r.Reason)
		}
		reasons[r.Reason]++
	}
	if frac := float64(bad) / float64(good); math.Abs(frac-0.05) > 5*math.Sqrt(0.05/float64(good)) {
		t.Fatalf("%d malformed per %d valid: %.4f, want 0.05", bad, good, frac)
	}
	if len(reasons) < 8 {
		t.Fatalf("only %d reasons among %d malformed messages: %v", len(reasons), bad, reasons)
	}
	// Malformed messages are extra: the valid stream is the same without them.
	var filtered []Record
	for _, r := range recs {
		if r.Valid() {
			filtered = append(filtered, r)
		}
	}
	cfg.Malformed = 0
	if !reflect.DeepEqual(filtered, drain(t, cfg)) {
		t.Fatal("the valid events differ with and without malformed messages")
	}
}

func TestConfigValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"defaults", func(*Config) {}, ""},
		{"items", func(c *Config) { c.Items = -1 }, "items"},
		{"zipf", func(c *Config) { c.Zipf = -2 }, "exponent"},
		{"rate", func(c *Config) { c.Rate = -1 }, "rate"},
		{"rate NaN", func(c *Config) { c.Rate = math.NaN() }, "rate"},
		{"servers", func(c *Config) { c.Servers = -5 }, "servers"},
		{"duration", func(c *Config) { c.Duration = 1500 * time.Millisecond }, "whole number of seconds"},
		{"late", func(c *Config) { c.Late = 1.5 }, "late fraction"},
		{"malformed", func(c *Config) { c.Malformed = -0.1 }, "malformed"},
		{"start", func(c *Config) { c.Start = time.Date(1999, 1, 1, 0, 0, 0, 0, time.UTC) }, "start"},
		{"end", func(c *Config) {
			c.Start = time.Date(2099, 12, 31, 0, 0, 0, 0, time.UTC)
			c.Duration = 48 * time.Hour
		}, "ends at"},
		{"viral overlap", func(c *Config) {
			c.Viral = []Viral{{Item: "A", Share: 0.6, For: time.Hour}, {Item: "B", At: time.Minute, Share: 0.6, For: time.Hour}}
		}, "together take 120%"},
		{"viral apart", func(c *Config) {
			c.Viral = []Viral{{Item: "A", Share: 0.6, For: time.Hour}, {Item: "B", At: time.Hour, Share: 0.6, For: time.Hour}}
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultConfig()
			c.mod(&cfg)
			err := cfg.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatalf("unexpected error %v", err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrConfig mentioning %q", err, c.want)
			}
		})
	}
}

func TestParseViral(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []Viral
		err  string
	}{
		{"V42@+2m:30%:10m", []Viral{{Item: "V42", At: 2 * time.Minute, Share: 0.3, For: 10 * time.Minute}}, ""},
		{"V42@2m:0.3:10m", []Viral{{Item: "V42", At: 2 * time.Minute, Share: 0.3, For: 10 * time.Minute}}, ""},
		{"a@b@+1d:5%:2d:1d12h", []Viral{{Item: "a@b", At: 24 * time.Hour, Share: 0.05, For: 48 * time.Hour, Ramp: 36 * time.Hour}}, ""},
		{"X@+0s:100%:1s, Y@+1s:50%:1h", []Viral{{Item: "X", Share: 1, For: time.Second}, {Item: "Y", At: time.Second, Share: 0.5, For: time.Hour}}, ""},
		{"", nil, ""},
		{"V42", nil, "no '@'"},
		{"V42@+2m:30%", nil, "3 or 4"},
		{"V42@+2m:30%:10m:1m:1m", nil, "3 or 4"},
		{"V42@+soon:30%:10m", nil, "start"},
		{"V42@+2m:lots:10m", nil, "share"},
		{"V42@+2m:130%:10m", nil, "not in (0%, 100%]"},
		{"V42@+2m:0%:10m", nil, "not in (0%, 100%]"},
		{"V42@+2m:30%:0s", nil, "not positive"},
		{"V42@+2m:30%:10m:11m", nil, "ramp"},
		{"@+2m:30%:10m", nil, "item"},
		{"V42@+xd:30%:10m", nil, "days"},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseViral(c.in)
			if c.err != "" {
				if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one mentioning %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
			for _, v := range got { // String is the inverse of ParseViral
				back, err := ParseViral(v.String())
				if err != nil || len(back) != 1 || back[0] != v {
					t.Fatalf("ParseViral(%q) = %+v, %v; want %+v", v.String(), back, err, v)
				}
			}
		})
	}
}

func BenchmarkGenerator(b *testing.B) {
	cfg := DefaultConfig()
	g, _ := NewGenerator(cfg)
	var recs []Record
	b.ReportAllocs()
	views := 0
	for b.Loop() {
		recs, _ = g.NextSecond(recs[:0])
		views += 50_000
	}
	b.ReportMetric(float64(views)/b.Elapsed().Seconds(), "views/s")
}

func TestFormatSpan(t *testing.T) {
	for d, want := range map[time.Duration]string{
		35 * 24 * time.Hour: "35d", 30 * time.Hour: "1d6h", 150 * time.Second: "2m30s", time.Hour: "1h",
		90 * time.Minute: "1h30m", 0: "0s", 1500 * time.Millisecond: "1.5s",
	} {
		if got := FormatSpan(d); got != want {
			t.Errorf("FormatSpan(%s) = %q, want %q", d, got, want)
		}
		if back, err := ParseSpan(FormatSpan(d)); err != nil || back != d {
			t.Errorf("ParseSpan(%q) = %s, %v; want %s", FormatSpan(d), back, err, d)
		}
	}
}
