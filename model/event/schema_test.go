package event

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"trending/schemas"
)

// schemaTestdata holds example documents named valid_*.json or invalid_<reason>_*.json.
const schemaTestdata = "../../schemas/testdata/events"

type schemaProp struct {
	Type             string       `json:"type"`
	MinLength        *int         `json:"minLength"`
	MaxLength        *int         `json:"maxLength"`
	MaxBytes         *int         `json:"x-maxBytes"`
	Minimum          *int64       `json:"minimum"`
	Maximum          *int64       `json:"maximum"`
	ExclusiveMaximum *int64       `json:"exclusiveMaximum"`
	Pattern          string       `json:"pattern"`
	Format           string       `json:"format"`
	OneOf            []schemaProp `json:"oneOf"`
}

type eventSchema struct {
	Type                 string                `json:"type"`
	MaxMessageBytes      int                   `json:"x-maxMessageBytes"`
	AdditionalProperties *bool                 `json:"additionalProperties"`
	Required             []string              `json:"required"`
	Properties           map[string]schemaProp `json:"properties"`
	Examples             []json.RawMessage     `json:"examples"`
}

func loadSchema(t *testing.T) eventSchema {
	t.Helper()
	var s eventSchema
	if err := json.Unmarshal(schemas.EventSchema, &s); err != nil {
		t.Fatalf("parse event.schema.json: %v", err)
	}
	return s
}

// ecmaToRE2 turns the schema's ECMA-262 \uXXXX escapes into RE2's \x{XXXX}.
func ecmaToRE2(t *testing.T, p string) *regexp.Regexp {
	t.Helper()
	re, err := regexp.Compile(regexp.MustCompile(`\\u([0-9A-Fa-f]{4})`).ReplaceAllString(p, `\x{$1}`))
	if err != nil {
		t.Fatalf("pattern %q: %v", p, err)
	}
	return re
}

func intp(p *int) int {
	if p == nil {
		return -1
	}
	return *p
}

func int64p(p *int64) int64 {
	if p == nil {
		return -1
	}
	return *p
}

// TestSchemaMatchesDecoder checks every number and name in event.schema.json against the Go
// constants, so the schema cannot drift from the decoder.
func TestSchemaMatchesDecoder(t *testing.T) {
	s := loadSchema(t)
	if s.Type != "object" || s.AdditionalProperties == nil || *s.AdditionalProperties {
		t.Errorf("schema must be an object with additionalProperties false (unknown fields are rejected)")
	}
	if s.MaxMessageBytes != MaxEventBytes {
		t.Errorf("x-maxMessageBytes = %d, MaxEventBytes = %d", s.MaxMessageBytes, MaxEventBytes)
	}
	if want := []string{FieldItemID, FieldCount, FieldTS}; !slices.Equal(s.Required, want) {
		t.Errorf("required = %v, want %v", s.Required, want)
	}
	var names []string
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	if want := []string{FieldAccountAgeDays, FieldCount, FieldItemID, FieldRegion, FieldTS, FieldUserID}; !slices.Equal(names, want) {
		t.Errorf("properties = %v, want %v", names, want)
	}

	item := s.Properties[FieldItemID]
	if item.Type != "string" || intp(item.MinLength) != 1 || intp(item.MaxLength) != MaxItemIDBytes || intp(item.MaxBytes) != MaxItemIDBytes {
		t.Errorf("item_id = %+v, want string, minLength 1, maxLength and x-maxBytes %d", item, MaxItemIDBytes)
	}
	region := s.Properties[FieldRegion]
	if region.Type != "string" || region.MinLength != nil || intp(region.MaxLength) != MaxRegionBytes || intp(region.MaxBytes) != MaxRegionBytes {
		t.Errorf("region = %+v, want string, maxLength and x-maxBytes %d", region, MaxRegionBytes)
	}
	user := s.Properties[FieldUserID]
	if user.Type != "string" || user.MinLength != nil || intp(user.MaxLength) != MaxUserIDBytes || intp(user.MaxBytes) != MaxUserIDBytes {
		t.Errorf("user_id = %+v, want string, maxLength and x-maxBytes %d", user, MaxUserIDBytes)
	}
	age := s.Properties[FieldAccountAgeDays]
	if age.Type != "integer" || age.Minimum == nil || *age.Minimum != 0 || int64p(age.Maximum) != MaxAccountAgeDays {
		t.Errorf("account_age_days = %+v, want integer 0..%d", age, MaxAccountAgeDays)
	}
	count := s.Properties[FieldCount]
	if count.Type != "integer" || int64p(count.Minimum) != MinCount || int64p(count.Maximum) != MaxCount {
		t.Errorf("count = %+v, want integer %d..%d", count, MinCount, MaxCount)
	}
	ts := s.Properties[FieldTS]
	if len(ts.OneOf) != 2 {
		t.Fatalf("ts must be oneOf [string, integer], got %+v", ts)
	}
	str, num := ts.OneOf[0], ts.OneOf[1]
	if str.Type != "string" || str.Format != "date-time" || str.Pattern == "" {
		t.Errorf("ts string form = %+v, want a date-time string with a pattern", str)
	}
	if num.Type != "integer" || int64p(num.Minimum) != MinTSMilli || int64p(num.ExclusiveMaximum) != MaxTSMilli {
		t.Errorf("ts integer form = %+v, want [%d, %d)", num, int64(MinTSMilli), int64(MaxTSMilli))
	}

	for i, ex := range s.Examples {
		if _, err := Decode(ex); err != nil {
			t.Errorf("schema example %d rejected: %v", i, err)
		}
	}
}

// TestSchemaPatterns checks that the schema's character and timestamp patterns accept what
// the decoder accepts and reject what it rejects for that reason.
func TestSchemaPatterns(t *testing.T) {
	s := loadSchema(t)
	itemRE := ecmaToRE2(t, s.Properties[FieldItemID].Pattern)
	regionRE := ecmaToRE2(t, s.Properties[FieldRegion].Pattern)
	userRE := ecmaToRE2(t, s.Properties[FieldUserID].Pattern)
	tsRE := ecmaToRE2(t, s.Properties[FieldTS].OneOf[0].Pattern)

	// Characters: random strings from an alphabet rich in edge cases.
	alphabet := []rune{'a', 'Z', '0', ' ', '"', '\\', '/', 0, 0x1f, 0x7f, 0x80, 0x9f, 0xa0, 'é', 0x2028, 0xfffd, 0x1f3ac}
	rng := newRand(t)
	for i := 0; i < 5000; i++ {
		var sb strings.Builder
		for n := rng.IntN(6); n > 0; n-- {
			sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
		}
		v := sb.String()
		enc := Event{ItemID: v, Count: 1, TS: ms("2026-11-14T10:05:12Z")}.AppendJSON(nil)
		_, err := Decode(enc)
		if got, want := err == nil, itemRE.MatchString(v); got != want {
			t.Fatalf("item_id %+q: decoder accepts=%v, schema pattern=%v (%v)", v, got, want, err)
		}
		enc = Event{ItemID: "x", Count: 1, TS: ms("2026-11-14T10:05:12Z"), Region: v}.AppendJSON(nil)
		_, err = Decode(enc)
		if got, want := err == nil, regionRE.MatchString(v); got != want {
			t.Fatalf("region %+q: decoder accepts=%v, schema pattern=%v (%v)", v, got, want, err)
		}
		enc = Event{ItemID: "x", Count: 1, TS: ms("2026-11-14T10:05:12Z"), UserID: v}.AppendJSON(nil)
		_, err = Decode(enc)
		if got, want := err == nil, userRE.MatchString(v); got != want {
			t.Fatalf("user_id %+q: decoder accepts=%v, schema pattern=%v (%v)", v, got, want, err)
		}
	}

	// Timestamps: every lexical form the decoder accepts matches the pattern, and forms the
	// pattern rejects are rejected by the decoder. (Impossible dates match the pattern but
	// fail the decoder; the schema's $comment says so.)
	for _, c := range []struct {
		ts      string
		lexical bool // matches the pattern
		decodes bool
	}{
		{"2026-11-14T10:05:12Z", true, true},
		{"2026-11-14t10:05:12z", true, true},
		{"2026-11-14T10:05:12.1+01:00", true, true},
		{"2026-11-14T10:05:12.123456789-11:30", true, true},
		{"2026-02-30T10:05:12Z", true, false},
		{"1999-12-31T23:59:59Z", true, false},
		{"2026-11-14T10:05:12.1234567890Z", false, false},
		{"2026-11-14T10:05:12", false, false},
		{"2026-11-14 10:05:12Z", false, false},
		{"2026-11-14T10:05:12+0100", false, false},
		{"2026-11-14T10:05Z", false, false},
		{"20261114T100512Z", false, false},
	} {
		_, err := Decode([]byte(`{"item_id":"x","count":1,"ts":"` + c.ts + `"}`))
		if tsRE.MatchString(c.ts) != c.lexical || (err == nil) != c.decodes {
			t.Errorf("ts %q: pattern %v (want %v), decoder accepts %v (want %v)", c.ts, tsRE.MatchString(c.ts), c.lexical, err == nil, c.decodes)
		}
	}
}

// TestSchemaTestdata decodes every example document and checks the outcome its file name
// promises: valid_*.json decodes, invalid_<reason>_*.json fails with <reason>.
func TestSchemaTestdata(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(schemaTestdata, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no example documents in %s (%v)", schemaTestdata, err)
	}
	seen := map[Reason]bool{}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".json")
		t.Run(name, func(t *testing.T) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			_, derr := Decode(b)
			switch {
			case strings.HasPrefix(name, "valid_"):
				if derr != nil {
					t.Fatalf("rejected: %v", derr)
				}
			case strings.HasPrefix(name, "invalid_"):
				rest := strings.TrimPrefix(name, "invalid_")
				var want Reason
				for _, r := range Reasons() {
					if rest == string(r) || strings.HasPrefix(rest, string(r)+"_") {
						want = r
					}
				}
				if want == "" {
					t.Fatalf("file name names no Reason; want invalid_<reason>_<what>.json")
				}
				seen[want] = true
				if got := ReasonOf(derr); got != want {
					t.Fatalf("Decode = %v (reason %q), want reason %q", derr, got, want)
				}
			default:
				t.Fatalf("file name must start with valid_ or invalid_")
			}
			if !utf8.Valid(b) && strings.HasPrefix(name, "valid_") {
				t.Fatalf("a valid example must be UTF-8")
			}
		})
	}
	for _, r := range Reasons() {
		if !seen[r] {
			t.Errorf("no invalid_%s_*.json example", r)
		}
	}
}
