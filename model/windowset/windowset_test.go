package windowset

import (
	"strings"
	"testing"
	"time"

	"trending/model"
)

func TestDefaultIsTodaysSet(t *testing.T) {
	s := Default()
	if got, want := strings.Join(s.Live(), ","), "hour,day,month,all"; got != want {
		t.Errorf("live %s, want %s", got, want)
	}
	if got, want := strings.Join(model.PeriodStrings(s.Calendar()), ","), "hour,day,month"; got != want {
		t.Errorf("calendar %s, want %s", got, want)
	}
	if s.String() != DefaultSpec {
		t.Errorf("String() = %s, want %s", s, DefaultSpec)
	}
	if w, _ := s.Lookup("day", false); w.Length != 24*time.Hour || w.Bucket != time.Hour || w.Mode != Exact {
		t.Errorf("day = %+v", w)
	}
	if a := s.Aliases(); a["1h"] != "hour" || a["24h"] != "day" || len(a) != 2 {
		t.Errorf("aliases %v", a)
	}
}

func TestPresetSeed004(t *testing.T) {
	s, err := Preset("seed-004")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Join(s.Live(), ","), "minute,hour,day,7d"; got != want {
		t.Errorf("live %s, want %s", got, want)
	}
	// Yesterday and last week, which the batch makes exact.
	if got := strings.Join(model.PeriodStrings(s.Calendar()), ","); got != "day,week" {
		t.Errorf("calendar %s, want day,week", got)
	}
	if w, _ := s.Lookup("7d", false); w.Length != 7*24*time.Hour || w.Bucket != 24*time.Hour {
		t.Errorf("7d = %+v", w)
	}
	// Bounded memory whatever the number of distinct items: no window counts exactly.
	for _, w := range s.Windows {
		if w.Mode != Sketch {
			t.Errorf("%s counts in mode %q, want sketch", w.Name, w.Mode)
		}
	}
	if _, ok := s.ResolveLive("all"); ok {
		t.Error("all resolves without an all-time window")
	}
	if w, ok := s.ResolveLive("1h"); !ok || w != "hour" {
		t.Errorf("1h -> %q %v", w, ok)
	}
	if _, err := Preset("seed-005"); err == nil || !strings.Contains(err.Error(), "default, seed-004") {
		t.Errorf("unknown preset: %v", err)
	}
}

func TestParseRoundTrip(t *testing.T) {
	for _, spec := range []string{DefaultSpec, Presets["seed-004"], "day=sliding:1d/1m:exact,calendar:week:sketch", "all=alltime", "now=decayed:1h:exact,slow=decayed:7d"} {
		s, err := Parse(spec)
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		back, err := Parse(s.String())
		if err != nil || back.String() != s.String() {
			t.Errorf("%s: round trip %s: %v", spec, back, err)
		}
	}
	s, err := Parse(" all , calendar:day ")
	if err != nil || s.Windows[0].Kind != AllTime || s.Windows[0].Name != "all" || s.Windows[1].Name != "day" {
		t.Errorf("short forms: %+v %v", s, err)
	}
}

func TestParseRefusesBadSpecs(t *testing.T) {
	for _, c := range []struct{ spec, want string }{
		{"", "no windows"},
		{"hour=sliding:1h", "LENGTH/BUCKET"},
		{"sliding:1h/1m", "needs a name"},
		{"hour=sliding:1h/5m", "bucket 5m: use 1m, 1h or 24h"},
		{"hour=sliding:90s/1m", "not a positive whole number"},
		{"hour=sliding:2d/1m", "2880 buckets"},
		{"hour=sliding:1x/1m", "not a duration"},
		{"hour=sliding:1h/1m:fast", `mode "fast"`},
		{"Hour=sliding:1h/1m", "lowercase"},
		{"all-base=sliding:1h/1m", "reserved"},
		{"all=sliding:1h/1m", "all-time window's"},
		{"calendar:fortnight", `span "fortnight": use one of hour, day, week, month`},
		{"lastweek=calendar:week", "served under its span's name"},
		{"forever=alltime", "named all"},
		{"decayed:1h", "needs a name"},
		{"now=decayed", "want decayed:HALFLIFE"},
		{"now=decayed:1m", "half-life 1m: use a whole number of minutes from 5m to 30d"},
		{"now=decayed:90s", "half-life 1m30s"},
		{"now=decayed:31d", "half-life 31d"},
		{"now=decayed:1h:fast", `mode "fast"`},
		{"all=decayed:1h", "all-time window's"},
		{"now=decayed:soon", "not a duration"},
		{"hour=tumbling:1h", `kind "tumbling"`},
		{"hour=sliding:1h/1m,hour=sliding:2h/1m", "configured twice"},
		{"calendar:day,calendar:day", "configured twice"},
	} {
		_, err := Parse(c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", c.spec, err, c.want)
		}
	}
	// A sliding and a calendar window may share a name: different key spaces.
	if _, err := Parse("hour=sliding:1h/1m,calendar:hour"); err != nil {
		t.Error(err)
	}
}

func TestParseYAML(t *testing.T) {
	s, err := ParseYAML([]byte(`windows:
  - {name: minute, kind: sliding, length: 1m, bucket: 1m, mode: exact}
  - {name: 7d, kind: sliding, length: 7d, bucket: 1h}
  - {kind: calendar, span: week}
  - {kind: alltime, mode: sketch}
  - {name: now, kind: decayed, half_life: 1h, mode: exact}
`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.String(), "minute=sliding:1m/1m:exact,7d=sliding:7d/1h,calendar:week,all=alltime:sketch,now=decayed:1h:exact"; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
	for _, c := range []struct{ doc, want string }{
		{"windows:\n  - {name: x, kind: sliding, length: 1h, bucket: 1m, size: 3}\n", "size"},
		{"windows:\n  - {kind: calendar, span: week, length: 7d}\n", "sliding windows only"},
		{"windows:\n  - {name: x, kind: sliding, length: 1h}\n", "bucket"},
		{"windows: []\n", "no windows"},
		{"windows:\n  - {name: now, kind: decayed}\n", "half_life"},
		{"windows:\n  - {name: hour, kind: sliding, length: 1h, bucket: 1m, half_life: 1h}\n", "decayed windows only"},
	} {
		if _, err := ParseYAML([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseYAML(%q) = %v, want %q", c.doc, err, c.want)
		}
	}
}

func TestAcceptsKey(t *testing.T) {
	s, _ := Preset("seed-004")
	week := model.Week.Align(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	for _, c := range []struct {
		k    model.Key
		want bool
	}{
		{model.Key{Window: "minute"}, true},
		{model.Key{Window: "7d"}, true},
		{model.Key{Window: "month"}, false},
		{model.Key{Window: "all"}, false},
		{model.Key{Window: model.BaseWindow}, false},
		{model.Key{Window: "week", Start: week}, true},
		{model.Key{Window: "hour", Start: week}, false},
		{model.Key{Window: "day", Start: week}, true},
		{model.TopicsKey("eu", "volume"), true},
	} {
		if got := s.AcceptsKey(c.k); got != c.want {
			t.Errorf("AcceptsKey(%s) = %v, want %v", c.k, got, c.want)
		}
	}
	if d := s.Describe(); d != "live windows minute, hour, day, 7d (aliases 1h, 24h); calendar windows day, week" {
		t.Errorf("Describe: %s", d)
	}
}

func TestISOWeek(t *testing.T) {
	// 2026-11-30 is a Monday; 2026-12-06 a Sunday.
	mon := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	for _, ts := range []time.Time{mon, mon.Add(36 * time.Hour), time.Date(2026, 12, 6, 23, 59, 59, 0, time.UTC)} {
		if got := model.Week.Align(ts); !got.Equal(mon) {
			t.Errorf("Align(week, %s) = %s, want %s", ts, got, mon)
		}
	}
	if got := model.Week.Align(mon.Add(-time.Second)); !got.Equal(mon.AddDate(0, 0, -7)) {
		t.Errorf("Sunday before: %s", got)
	}
	if !model.Week.Next(mon).Equal(mon.AddDate(0, 0, 7)) || !model.Week.Aligned(mon) || model.Week.Aligned(mon.AddDate(0, 0, 1)) {
		t.Error("Next/Aligned of week")
	}
	// Across a year end: 2027-01-01 is a Friday, its ISO week starts 2026-12-28.
	if got := model.Week.Align(time.Date(2027, 1, 1, 5, 0, 0, 0, time.UTC)); !got.Equal(time.Date(2026, 12, 28, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("year end: %s", got)
	}
}

// TestFormatDuration: what ParseDuration reads back; 90s printed "1m3" before (the trailing
// "0s" of "1m30s" was cut), which an error message about a 90-second half-life showed.
func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Minute: "1m", 90 * time.Second: "1m30s", 30 * time.Second: "30s", time.Hour: "1h",
		90 * time.Minute: "1h30m", 24 * time.Hour: "24h", 48 * time.Hour: "2d", 0: "0s",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		if back, err := ParseDuration(FormatDuration(d)); err != nil || back != d {
			t.Errorf("ParseDuration(%q) = %v, %v", FormatDuration(d), back, err)
		}
	}
}
