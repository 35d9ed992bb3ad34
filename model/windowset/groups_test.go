package windowset

import (
	"strings"
	"testing"
	"time"

	"trending/model"
)

func TestParseGroupValues(t *testing.T) {
	g, err := ParseGroupValues("region", " eu, us ,apac", 7)
	if err != nil {
		t.Fatal(err)
	}
	if !g.On() || g.Every || g.Max != 0 || strings.Join(g.Values, "|") != "eu|us|apac" {
		t.Fatalf("%+v", g)
	}
	if g.String() != "region=eu,us,apac" || g.Kept() != g.String() || g.Limit() != 3 || g.Describe() != "region eu, us, apac" {
		t.Errorf("String %q Kept %q Limit %d Describe %q", g.String(), g.Kept(), g.Limit(), g.Describe())
	}
	if !g.Accepts("eu") || g.Accepts("EU") || g.Accepts("") || g.Accepts("mars") {
		t.Error("Accepts")
	}
	every, err := ParseGroupValues("region", "*", 5)
	if err != nil {
		t.Fatal(err)
	}
	if !every.Every || every.Limit() != 5 || every.String() != "region=*/5" || every.Kept() != "region=*" || !every.Accepts("mars") || every.Accepts("a/b") {
		t.Errorf("%+v: String %q Kept %q", every, every.String(), every.Kept())
	}
	if every.Describe() != "every region value seen (up to 5)" {
		t.Errorf("Describe %q", every.Describe())
	}
	off, err := ParseGroupValues("region", "", 5)
	if err != nil || off.On() || off.String() != "" || off.Accepts("eu") || off.Limit() != 0 {
		t.Errorf("off: %+v %v", off, err)
	}
	if (Groups{}).Validate() != nil || (Groups{}).On() {
		t.Error("the zero Groups is off and valid")
	}
	for _, c := range []struct {
		by, values string
		max        int
		want       string
	}{
		{"country", "eu", 0, `group dimension "country": use region`},
		{"", "eu", 0, "without a dimension"},
		{"region", "*", 0, "a cap of 0 region values: use 1..1024"},
		{"region", "*", MaxGroups + 1, "use 1..1024"},
		{"region", "eu,eu", 0, `"eu" is given twice`},
		{"region", "eu,,us", 0, `region value ""`},
		{"region", "e/u", 0, `region value "e/u"`},
		{"region", "eu,*", 0, "give * alone"},
		{"region", strings.Repeat("x,", MaxGroups) + "y", 0, "at most 1024"},
	} {
		if _, err := ParseGroupValues(c.by, c.values, c.max); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q %q %d: %v, want %q", c.by, c.values, c.max, err, c.want)
		}
	}
}

func TestAcceptsGroupKeys(t *testing.T) {
	s := Default()
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	hourEU := model.Key{Window: "hour", Group: "eu"}
	if s.AcceptsKey(hourEU) {
		t.Fatal("a set without groups accepts a group list")
	}
	s.Groups = Groups{By: ByRegion, Values: []string{"eu", "us"}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[model.Key]bool{
		hourEU: true,
		{Window: "hour", Group: "us", Start: start}: true,
		{Window: "all", Group: "eu"}:                true,
		{Window: "hour", Group: "apac"}:             false, // not a configured value
		{Window: "minute", Group: "eu"}:             false, // not a configured window
		{Window: "week", Group: "eu", Start: start}: false,
		{Window: model.BaseWindow, Group: "eu"}:     false,
		{Window: "hour", Group: "eu", Score: "x"}:   false,
		{Window: "hour", Score: "x"}:                false,
		model.TopicsKey("eu", "surge"):              true,
	} {
		if got := s.AcceptsKey(k); got != want {
			t.Errorf("AcceptsKey(%v) = %v, want %v", k, got, want)
		}
	}
	if d := s.Describe(); !strings.HasSuffix(d, "; lists per region: eu, us") {
		t.Errorf("Describe %q", d)
	}
	s.Groups = Groups{By: ByRegion, Every: true, Max: 3}
	if !s.AcceptsKey(model.Key{Window: "day", Group: "anything"}) || !strings.HasSuffix(s.Describe(), "lists per region: every region value seen (up to 3)") {
		t.Errorf("every: %q", s.Describe())
	}
}

func TestParseYAMLGroups(t *testing.T) {
	doc := "windows:\n  - {name: hour, kind: sliding, length: 1h, bucket: 1m}\ngroups:\n  by: region\n  values: [eu, us]\n"
	s, err := ParseYAML([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if s.Groups.String() != "region=eu,us" || !HasGroups([]byte(doc)) {
		t.Errorf("%+v", s.Groups)
	}
	s, err = ParseYAML([]byte("windows:\n  - {kind: calendar, span: day}\ngroups: {by: region, every: true}\n"))
	if err != nil || s.Groups.String() != "region=*/64" {
		t.Errorf("every without max: %+v %v", s.Groups, err)
	}
	if HasGroups([]byte("windows:\n  - {kind: calendar, span: day}\n")) {
		t.Error("HasGroups without groups")
	}
	for doc, want := range map[string]string{
		"windows:\n  - {kind: calendar, span: day}\ngroups: {by: region, values: [eu], max: 3}\n": "max caps every: true only",
		"windows:\n  - {kind: calendar, span: day}\ngroups: {by: region, every: true, max: 0}\n":  "a cap of 0",
		"windows:\n  - {kind: calendar, span: day}\ngroups: {by: region, value: [eu]}\n":          "field value not found",
	} {
		if _, err := ParseYAML([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", doc, err, want)
		}
	}
}
