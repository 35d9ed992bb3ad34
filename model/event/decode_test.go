package event

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

func ms(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

// ev builds an event without the trending-topics fields.
func ev(item string, count uint32, ts time.Time, region string) Event {
	return Event{ItemID: item, Count: count, TS: ts, Region: region}
}

func TestDecodeValid(t *testing.T) {
	base := ms("2026-11-14T10:05:12Z")
	long := strings.Repeat("x", MaxItemIDBytes)
	longRegion := strings.Repeat("é", MaxRegionBytes/2)
	cases := []struct {
		name string
		in   string
		want Event
	}{
		{"example", `{"item_id": "V7", "count": 3, "ts": "2026-11-14T10:05:12Z", "region": "eu"}`,
			ev("V7", 3, base, "eu")},
		{"canonical", `{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12.000Z"}`, ev("V7", 3, base, "")},
		{"field order free", `{"ts":"2026-11-14T10:05:12Z","region":"eu","count":3,"item_id":"V7"}`,
			ev("V7", 3, base, "eu")},
		{"whitespace everywhere", " \t\r\n{ \"item_id\" :\n\"V7\" , \"count\"\t: 3 ,\"ts\" : \"2026-11-14T10:05:12Z\" }\n ",
			ev("V7", 3, base, "")},
		{"unix millis", `{"item_id":"V7","count":3,"ts":1794650712000}`, ev("V7", 3, base, "")},
		{"unix millis with ms", `{"item_id":"V7","count":3,"ts":1794650712345}`,
			ev("V7", 3, ms("2026-11-14T10:05:12.345Z"), "")},
		{"offset normalised", `{"item_id":"V7","count":3,"ts":"2026-11-14T11:35:12+01:30"}`, ev("V7", 3, base, "")},
		{"negative offset across midnight", `{"item_id":"V7","count":3,"ts":"2026-11-13T23:05:12-11:00"}`,
			ev("V7", 3, base, "")},
		{"minus zero offset", `{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12-00:00"}`, ev("V7", 3, base, "")},
		{"lower case t and z", `{"item_id":"V7","count":3,"ts":"2026-11-14t10:05:12z"}`, ev("V7", 3, base, "")},
		{"fraction 1 digit", `{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12.3Z"}`,
			ev("V7", 3, ms("2026-11-14T10:05:12.3Z"), "")},
		{"fraction truncated not rounded", `{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:59.999999999Z"}`,
			ev("V7", 3, ms("2026-11-14T10:05:59.999Z"), "")},
		{"leap day", `{"item_id":"V7","count":3,"ts":"2028-02-29T00:00:00Z"}`, ev("V7", 3, ms("2028-02-29T00:00:00Z"), "")},
		{"earliest ts", `{"item_id":"V7","count":3,"ts":"2000-01-01T00:00:00Z"}`, ev("V7", 3, time.UnixMilli(MinTSMilli).UTC(), "")},
		{"latest ts", `{"item_id":"V7","count":3,"ts":4102444799999}`, ev("V7", 3, time.UnixMilli(MaxTSMilli-1).UTC(), "")},
		{"offset brings into range", `{"item_id":"V7","count":3,"ts":"1999-12-31T23:30:00-00:30"}`,
			ev("V7", 3, time.UnixMilli(MinTSMilli).UTC(), "")},
		{"min count", `{"item_id":"V7","count":1,"ts":"2026-11-14T10:05:12Z"}`, ev("V7", 1, base, "")},
		{"max count", `{"item_id":"V7","count":1000000,"ts":"2026-11-14T10:05:12Z"}`, ev("V7", 1000000, base, "")},
		{"empty region", `{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12Z","region":""}`, ev("V7", 3, base, "")},
		{"max item id", `{"item_id":"` + long + `","count":3,"ts":"2026-11-14T10:05:12Z"}`, ev(long, 3, base, "")},
		{"max region in bytes", `{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12Z","region":"` + longRegion + `"}`,
			ev("V7", 3, base, longRegion)},
		{"unicode item id", `{"item_id":"видео/日本語/🎬","count":3,"ts":"2026-11-14T10:05:12Z"}`,
			ev("видео/日本語/🎬", 3, base, "")},
		{"escapes", `{"item_id":"a\"b\\c\/d\u00e9\ud83c\udfac","count":3,"ts":"2026-11-14T10:05:12Z"}`,
			ev(`a"b\c/dé🎬`, 3, base, "")},
		{"escaped field names", `{"item\u005fid":"V7","c\u006funt":3,"\u0074s":"2026-11-14T10:05:12Z"}`,
			ev("V7", 3, base, "")},
		{"escaped ts", `{"item_id":"V7","count":3,"ts":"2026\u002d11-14T10:05:12Z"}`, ev("V7", 3, base, "")},
		{"escaped max item id", `{"item_id":"` + strings.Repeat(`\u0078`, MaxItemIDBytes) + `","count":3,"ts":1794650712000}`,
			ev(long, 3, base, "")},
		{"user and account age", `{"item_id":"V7","count":1,"ts":1794650712000,"region":"eu","user_id":"u-42","account_age_days":3}`,
			Event{ItemID: "V7", Count: 1, TS: base, Region: "eu", UserID: "u-42", AccountAgeDays: 3, HasAccountAge: true}},
		{"user without region", `{"account_age_days":0,"user_id":"u\u00e9","item_id":"V7","count":1,"ts":1794650712000}`,
			Event{ItemID: "V7", Count: 1, TS: base, UserID: "ué", HasAccountAge: true}},
		{"max user id", `{"item_id":"V7","count":1,"ts":1794650712000,"user_id":"` + strings.Repeat("u", MaxUserIDBytes) + `"}`,
			Event{ItemID: "V7", Count: 1, TS: base, UserID: strings.Repeat("u", MaxUserIDBytes)}},
		{"empty user id", `{"item_id":"V7","count":1,"ts":1794650712000,"user_id":""}`, ev("V7", 1, base, "")},
		{"oldest account", `{"item_id":"V7","count":1,"ts":1794650712000,"account_age_days":100000}`,
			Event{ItemID: "V7", Count: 1, TS: base, AccountAgeDays: MaxAccountAgeDays, HasAccountAge: true}},
		{"largest valid event, every character escaped", `{"item_id":"` + strings.Repeat(`\u0078`, MaxItemIDBytes) +
			`","count":1000000,"ts":"2026-11-14T10:05:12.123456789+01:00","region":"` + strings.Repeat(`\u0072`, MaxRegionBytes) +
			`","user_id":"` + strings.Repeat(`\u0075`, MaxUserIDBytes) + `","account_age_days":100000}`,
			Event{ItemID: long, Count: MaxCount, TS: ms("2026-11-14T09:05:12.123Z"), Region: strings.Repeat("r", MaxRegionBytes),
				UserID: strings.Repeat("u", MaxUserIDBytes), AccountAgeDays: MaxAccountAgeDays, HasAccountAge: true}},
		{"space and U+FFFD allowed", `{"item_id":"a b\ufffd","count":3,"ts":1794650712000}`, ev("a b\ufffd", 3, base, "")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.in))
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			if got != tc.want {
				t.Fatalf("Decode = %+v, want %+v", got, tc.want)
			}
			if err := got.Validate(); err != nil {
				t.Fatalf("decoded event fails Validate: %v", err)
			}
			enc := got.AppendJSON(nil)
			again, err := Decode(enc)
			if err != nil || again != got {
				t.Fatalf("round trip of %s = %+v, %v", enc, again, err)
			}
		})
	}
}

func TestDecodeInvalid(t *testing.T) {
	const ts = `"ts":"2026-11-14T10:05:12Z"`
	cases := []struct {
		name   string
		in     string
		reason Reason
		field  string
		msg    string // substring of Error()
	}{
		{"empty", ``, ReasonMalformedJSON, "", "end of message"},
		{"not an object", `[1,2]`, ReasonMalformedJSON, "", "one JSON object"},
		{"truncated", `{"item_id":"V7","count":3`, ReasonMalformedJSON, "", "end of message"},
		{"unterminated string", `{"item_id":"V7`, ReasonMalformedJSON, "", "unterminated"},
		{"trailing comma", `{"item_id":"V7","count":3,` + ts + `,}`, ReasonMalformedJSON, "", "field name"},
		{"single quotes", `{'item_id':'V7'}`, ReasonMalformedJSON, "", "field name"},
		{"missing colon", `{"item_id" "V7"}`, ReasonMalformedJSON, "", "':'"},
		{"raw control char in string", "{\"item_id\":\"V\t7\"}", ReasonMalformedJSON, "", "control character"},
		{"bad escape", `{"item_id":"V\x7"}`, ReasonMalformedJSON, "", "bad escape"},
		{"short unicode escape", `{"item_id":"V\u07"}`, ReasonMalformedJSON, "", "four hex"},
		{"leading zero", `{"item_id":"V7","count":03,` + ts + `}`, ReasonMalformedJSON, "", "leading zero"},
		{"bare minus", `{"item_id":"V7","count":-,` + ts + `}`, ReasonMalformedJSON, "", "digit"},
		{"dot without digits", `{"item_id":"V7","count":3.,` + ts + `}`, ReasonMalformedJSON, "", "digit after '.'"},
		{"exponent without digits", `{"item_id":"V7","count":3e,` + ts + `}`, ReasonMalformedJSON, "", "exponent"},
		{"bare word", `{"item_id":V7}`, ReasonMalformedJSON, "", "a value"},
		{"byte order mark", "\xef\xbb\xbf{\"item_id\":\"V7\",\"count\":3," + ts + "}", ReasonMalformedJSON, "", "one JSON object"},
		{"too large", `{"item_id":"` + strings.Repeat("x", MaxEventBytes) + `"}`, ReasonTooLarge, "", "limit is 4096"},
		{"two objects", `{"item_id":"V7","count":3,` + ts + `}{"item_id":"V8","count":3,` + ts + `}`, ReasonTrailingData, "", "one event per message"},
		{"trailing garbage", `{"item_id":"V7","count":3,` + ts + `} x`, ReasonTrailingData, "", "after the object"},
		{"unknown field typo", `{"itemid":"V7","count":3,` + ts + `}`, ReasonUnknownField, "itemid", "itemid: unknown field"},
		{"unknown field case", `{"Item_ID":"V7","count":3,` + ts + `}`, ReasonUnknownField, "Item_ID", "unknown field"},
		{"unknown field extra", `{"item_id":"V7","count":3,` + ts + `,"title":"x"}`, ReasonUnknownField, "title", "unknown field"},
		{"unknown field hostile name", `{"a` + "\xff" + `b":1}`, ReasonUnknownField, `"a\xffb"`, "unknown field"},
		{"escaped name truncated prefix", `{"item_i\u0064XXXXXXXXXXXX":"V7"}`, ReasonUnknownField, "", "unknown field"},
		{"duplicate item id", `{"item_id":"V7","item_id":"V8","count":3,` + ts + `}`, ReasonDuplicateField, "item_id", "more than once"},
		{"duplicate via escape", `{"count":3,"co\u0075nt":4,"item_id":"V7",` + ts + `}`, ReasonDuplicateField, "count", "more than once"},
		{"empty object", `{}`, ReasonMissingField, "item_id", "item_id: is required"},
		{"missing count", `{"item_id":"V7",` + ts + `}`, ReasonMissingField, "count", "required"},
		{"missing ts", `{"item_id":"V7","count":3}`, ReasonMissingField, "ts", "required"},
		{"item id null", `{"item_id":null,"count":3,` + ts + `}`, ReasonBadItemID, "item_id", "got null"},
		{"item id number", `{"item_id":7,"count":3,` + ts + `}`, ReasonBadItemID, "item_id", "got a number"},
		{"item id object", `{"item_id":{},"count":3,` + ts + `}`, ReasonBadItemID, "item_id", "got an object"},
		{"item id empty", `{"item_id":"","count":3,` + ts + `}`, ReasonBadItemID, "item_id", "empty"},
		{"item id too long", `{"item_id":"` + strings.Repeat("x", MaxItemIDBytes+1) + `","count":3,` + ts + `}`, ReasonBadItemID, "item_id", "at most 256 bytes, got 257"},
		{"item id too long in bytes", `{"item_id":"` + strings.Repeat("é", 129) + `","count":3,` + ts + `}`, ReasonBadItemID, "item_id", "got 258"},
		{"item id too long escaped", `{"item_id":"` + strings.Repeat(`\u0078`, MaxItemIDBytes+1) + `","count":3,` + ts + `}`, ReasonBadItemID, "item_id", "got 257"},
		{"item id escaped control", `{"item_id":"V\u00007","count":3,` + ts + `}`, ReasonBadItemID, "item_id", "U+0000"},
		{"item id DEL", "{\"item_id\":\"V\x7f7\",\"count\":3," + ts + "}", ReasonBadItemID, "item_id", "U+007F"},
		{"item id C1 control", `{"item_id":"V` + "\u0085" + `7","count":3,` + ts + `}`, ReasonBadItemID, "item_id", "U+0085"},
		{"item id invalid utf8", "{\"item_id\":\"V\xff7\",\"count\":3," + ts + "}", ReasonBadItemID, "item_id", "UTF-8"},
		{"item id lone surrogate", `{"item_id":"V\ud800","count":3,` + ts + `}`, ReasonBadItemID, "item_id", "surrogate"},
		{"count zero", `{"item_id":"V7","count":0,` + ts + `}`, ReasonBadCount, "count", "count: must be 1..1000000, got 0"},
		{"count negative", `{"item_id":"V7","count":-3,` + ts + `}`, ReasonBadCount, "count", "got -3"},
		{"count minus zero", `{"item_id":"V7","count":-0,` + ts + `}`, ReasonBadCount, "count", "got -0"},
		{"count too big", `{"item_id":"V7","count":1000001,` + ts + `}`, ReasonBadCount, "count", "got 1000001"},
		{"count huge", `{"item_id":"V7","count":99999999999999999999999,` + ts + `}`, ReasonBadCount, "count", "got 9999"},
		{"count fraction", `{"item_id":"V7","count":3.5,` + ts + `}`, ReasonBadCount, "count", "integer literal, got 3.5"},
		{"count float form", `{"item_id":"V7","count":3.0,` + ts + `}`, ReasonBadCount, "count", "got 3.0"},
		{"count exponent", `{"item_id":"V7","count":3e2,` + ts + `}`, ReasonBadCount, "count", "got 3e2"},
		{"count string", `{"item_id":"V7","count":"3",` + ts + `}`, ReasonBadCount, "count", "got a string"},
		{"count null", `{"item_id":"V7","count":null,` + ts + `}`, ReasonBadCount, "count", "got null"},
		{"count bool", `{"item_id":"V7","count":true,` + ts + `}`, ReasonBadCount, "count", "got a boolean"},
		{"ts null", `{"item_id":"V7","count":3,"ts":null}`, ReasonBadTS, "ts", "got null"},
		{"ts array", `{"item_id":"V7","count":3,"ts":[1]}`, ReasonBadTS, "ts", "got an array"},
		{"ts no zone", `{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12"}`, ReasonBadTS, "ts", "RFC 3339"},
		{"ts space separator", `{"item_id":"V7","count":3,"ts":"2026-11-14 10:05:12Z"}`, ReasonBadTS, "ts", "RFC 3339"},
		{"ts date only", `{"item_id":"V7","count":3,"ts":"2026-11-14"}`, ReasonBadTS, "ts", "RFC 3339"},
		{"ts hh only offset", `{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12+01"}`, ReasonBadTS, "ts", "offset"},
		{"ts compact offset", `{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12+0100"}`, ReasonBadTS, "ts", "offset"},
		{"ts empty fraction", `{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12.Z"}`, ReasonBadTS, "ts", "fraction"},
		{"ts 10 fraction digits", `{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12.1234567890Z"}`, ReasonBadTS, "ts", "fraction"},
		{"ts february 30", `{"item_id":"V7","count":3,"ts":"2026-02-30T10:05:12Z"}`, ReasonBadTS, "ts", "real date"},
		{"ts not leap year", `{"item_id":"V7","count":3,"ts":"2100-02-29T10:05:12Z"}`, ReasonBadTS, "ts", "real date"},
		{"ts leap second", `{"item_id":"V7","count":3,"ts":"2026-12-31T23:59:60Z"}`, ReasonBadTS, "ts", "real date"},
		{"ts hour 24", `{"item_id":"V7","count":3,"ts":"2026-11-14T24:00:00Z"}`, ReasonBadTS, "ts", "real date"},
		{"ts offset 24h", `{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12+24:00"}`, ReasonBadTS, "ts", "offset"},
		{"ts before 2000", `{"item_id":"V7","count":3,"ts":"1999-12-31T23:59:59.999Z"}`, ReasonBadTS, "ts", "2000-01-01"},
		{"ts offset pushes before 2000", `{"item_id":"V7","count":3,"ts":"2000-01-01T00:30:00+01:00"}`, ReasonBadTS, "ts", "2000-01-01"},
		{"ts 2100", `{"item_id":"V7","count":3,"ts":"2100-01-01T00:00:00Z"}`, ReasonBadTS, "ts", "2100-01-01"},
		{"ts year 0", `{"item_id":"V7","count":3,"ts":"0000-01-01T00:00:00Z"}`, ReasonBadTS, "ts", "real date"},
		{"ts unix seconds", `{"item_id":"V7","count":3,"ts":1794650712}`, ReasonBadTS, "ts", "Unix seconds"},
		{"ts unix micros", `{"item_id":"V7","count":3,"ts":1794650712000000}`, ReasonBadTS, "ts", "2100"},
		{"ts negative", `{"item_id":"V7","count":3,"ts":-1}`, ReasonBadTS, "ts", "2000-01-01"},
		{"ts millis float", `{"item_id":"V7","count":3,"ts":1794650712000.5}`, ReasonBadTS, "ts", "integer literal"},
		{"ts millis exponent", `{"item_id":"V7","count":3,"ts":1.794650712e12}`, ReasonBadTS, "ts", "integer literal"},
		{"ts very long string", `{"item_id":"V7","count":3,"ts":"` + strings.Repeat("9", 100) + `"}`, ReasonBadTS, "ts", "100-byte string"},
		{"region null", `{"item_id":"V7","count":3,` + ts + `,"region":null}`, ReasonBadRegion, "region", "got null"},
		{"region number", `{"item_id":"V7","count":3,` + ts + `,"region":1}`, ReasonBadRegion, "region", "got a number"},
		{"region too long", `{"item_id":"V7","count":3,` + ts + `,"region":"` + strings.Repeat("r", MaxRegionBytes+1) + `"}`, ReasonBadRegion, "region", "at most 64 bytes"},
		{"region control", `{"item_id":"V7","count":3,` + ts + `,"region":"e\nu"}`, ReasonBadRegion, "region", "U+000A"},
		{"region lone surrogate", `{"item_id":"V7","count":3,` + ts + `,"region":"\udc00"}`, ReasonBadRegion, "region", "surrogate"},
		{"user_id null", `{"item_id":"V7","count":3,` + ts + `,"user_id":null}`, ReasonBadUserID, "user_id", "got null"},
		{"user_id number", `{"item_id":"V7","count":3,` + ts + `,"user_id":42}`, ReasonBadUserID, "user_id", "got a number"},
		{"user_id too long", `{"item_id":"V7","count":3,` + ts + `,"user_id":"` + strings.Repeat("u", MaxUserIDBytes+1) + `"}`, ReasonBadUserID, "user_id", "at most 128 bytes"},
		{"user_id escaped too long", `{"item_id":"V7","count":3,` + ts + `,"user_id":"` + strings.Repeat(`\u0075`, MaxUserIDBytes+1) + `"}`, ReasonBadUserID, "user_id", "at most 128 bytes"},
		{"user_id control", `{"item_id":"V7","count":3,` + ts + `,"user_id":"u\u0000"}`, ReasonBadUserID, "user_id", "U+0000"},
		{"user_id lone surrogate", `{"item_id":"V7","count":3,` + ts + `,"user_id":"\ud800"}`, ReasonBadUserID, "user_id", "surrogate"},
		{"user_id twice", `{"item_id":"V7","count":3,` + ts + `,"user_id":"a","user_id":"b"}`, ReasonDuplicateField, "user_id", "more than once"},
		{"account age negative", `{"item_id":"V7","count":3,` + ts + `,"account_age_days":-1}`, ReasonBadAccountAge, "account_age_days", "must be 0..100000"},
		{"account age too big", `{"item_id":"V7","count":3,` + ts + `,"account_age_days":100001}`, ReasonBadAccountAge, "account_age_days", "got 100001"},
		{"account age huge", `{"item_id":"V7","count":3,` + ts + `,"account_age_days":99999999999999999999}`, ReasonBadAccountAge, "account_age_days", "must be 0..100000"},
		{"account age fraction", `{"item_id":"V7","count":3,` + ts + `,"account_age_days":1.5}`, ReasonBadAccountAge, "account_age_days", "integer literal"},
		{"account age string", `{"item_id":"V7","count":3,` + ts + `,"account_age_days":"3"}`, ReasonBadAccountAge, "account_age_days", "got a string"},
		{"account age null", `{"item_id":"V7","count":3,` + ts + `,"account_age_days":null}`, ReasonBadAccountAge, "account_age_days", "got null"},
		{"first problem wins", `{"count":0,"item_id":""}`, ReasonBadCount, "count", "got 0"},
	}
	covered := map[Reason]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decode([]byte(tc.in))
			if err == nil {
				t.Fatalf("Decode accepted %+v", got)
			}
			if got != (Event{}) {
				t.Errorf("Decode returned %+v with an error", got)
			}
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %T %v is not a *DecodeError", err, err)
			}
			if de.Reason != tc.reason || (tc.field != "" && de.Field != tc.field) {
				t.Errorf("Reason, Field = %q, %q, want %q, %q (%v)", de.Reason, de.Field, tc.reason, tc.field, err)
			}
			if !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("Error() = %q, want it to contain %q", err.Error(), tc.msg)
			}
			if !errors.Is(err, ErrInvalid) || ReasonOf(err) != tc.reason {
				t.Errorf("errors.Is(ErrInvalid) or ReasonOf wrong for %v", err)
			}
			// The decoder never calls invalid JSON anything but malformed, too large or a
			// type error found before the bad syntax.
			if tc.reason == ReasonMalformedJSON && json.Valid([]byte(tc.in)) && strings.HasPrefix(strings.TrimSpace(tc.in), "{") {
				t.Errorf("classified valid JSON as malformed")
			}
			covered[de.Reason] = true
		})
	}
	for _, r := range Reasons() {
		if !covered[r] {
			t.Errorf("no test case for reason %q", r)
		}
	}
}

func TestValidate(t *testing.T) {
	ok := Event{ItemID: "V7", Count: 3, TS: ms("2026-11-14T10:05:12.123456789+02:00"), Region: "eu"}
	cases := []struct {
		name   string
		mod    func(*Event)
		reason Reason
	}{
		{"valid, any zone and precision", func(*Event) {}, ""},
		{"empty item", func(e *Event) { e.ItemID = "" }, ReasonBadItemID},
		{"long item", func(e *Event) { e.ItemID = strings.Repeat("x", MaxItemIDBytes+1) }, ReasonBadItemID},
		{"control in item", func(e *Event) { e.ItemID = "a\x00" }, ReasonBadItemID},
		{"C1 in item", func(e *Event) { e.ItemID = "a\u009f" }, ReasonBadItemID},
		{"invalid utf8 item", func(e *Event) { e.ItemID = "a\xc3" }, ReasonBadItemID},
		{"zero count", func(e *Event) { e.Count = 0 }, ReasonBadCount},
		{"big count", func(e *Event) { e.Count = MaxCount + 1 }, ReasonBadCount},
		{"zero time", func(e *Event) { e.TS = time.Time{} }, ReasonBadTS},
		{"1999", func(e *Event) { e.TS = time.UnixMilli(MinTSMilli - 1) }, ReasonBadTS},
		{"2100", func(e *Event) { e.TS = time.UnixMilli(MaxTSMilli) }, ReasonBadTS},
		{"long region", func(e *Event) { e.Region = strings.Repeat("r", MaxRegionBytes+1) }, ReasonBadRegion},
		{"bad region", func(e *Event) { e.Region = "\x7f" }, ReasonBadRegion},
		{"user and age", func(e *Event) { e.UserID, e.AccountAgeDays, e.HasAccountAge = "u-1", 0, true }, ""},
		{"oldest account", func(e *Event) { e.AccountAgeDays, e.HasAccountAge = MaxAccountAgeDays, true }, ""},
		{"long user", func(e *Event) { e.UserID = strings.Repeat("u", MaxUserIDBytes+1) }, ReasonBadUserID},
		{"bad user", func(e *Event) { e.UserID = "u\u0085" }, ReasonBadUserID},
		{"negative age", func(e *Event) { e.AccountAgeDays, e.HasAccountAge = -1, true }, ReasonBadAccountAge},
		{"too old", func(e *Event) { e.AccountAgeDays, e.HasAccountAge = MaxAccountAgeDays+1, true }, ReasonBadAccountAge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := ok
			tc.mod(&e)
			err := e.Validate()
			if ReasonOf(err) != tc.reason {
				t.Fatalf("Validate() = %v, want reason %q", err, tc.reason)
			}
			// Decode of the encoding agrees with Validate.
			_, derr := Decode(e.AppendJSON(nil))
			if ReasonOf(derr) != tc.reason {
				t.Fatalf("Decode(AppendJSON) = %v, want reason %q", derr, tc.reason)
			}
		})
	}
}

func TestAppendJSONCanonical(t *testing.T) {
	e := Event{ItemID: `V"7\`, Count: 3, TS: ms("2026-11-14T11:05:12.3456+01:00"), Region: "eu"}
	got := string(e.AppendJSON([]byte("prefix:")))
	want := `prefix:{"item_id":"V\"7\\","count":3,"ts":"2026-11-14T10:05:12.345Z","region":"eu"}`
	if got != want {
		t.Fatalf("AppendJSON = %s\nwant        %s", got, want)
	}
	e.Region = ""
	if got := string(e.AppendJSON(nil)); strings.Contains(got, "region") {
		t.Fatalf("empty region encoded: %s", got)
	}
	e.UserID, e.HasAccountAge = "u1", true
	want = `{"item_id":"V\"7\\","count":3,"ts":"2026-11-14T10:05:12.345Z","user_id":"u1","account_age_days":0}`
	if got := string(e.AppendJSON(nil)); got != want {
		t.Fatalf("AppendJSON = %s\nwant        %s", got, want)
	}
	// Control characters (invalid, but AppendJSON does not validate) still give valid JSON.
	if b := (Event{ItemID: "a\x01\n"}).AppendJSON(nil); !json.Valid(b) {
		t.Fatalf("invalid JSON: %s", b)
	}
}

func TestEncodingJSONInterop(t *testing.T) {
	in := `[{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12Z"},{"item_id":"V8","count":1,"ts":1794650712000,"region":"eu"}]`
	var evs []Event
	if err := json.Unmarshal([]byte(in), &evs); err != nil {
		t.Fatal(err)
	}
	if len(evs) != 2 || evs[0].ItemID != "V7" || evs[1].Region != "eu" {
		t.Fatalf("got %+v", evs)
	}
	out, err := json.Marshal(evs)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12.000Z"},{"item_id":"V8","count":1,"ts":"2026-11-14T10:05:12.000Z","region":"eu"}]`
	if string(out) != want {
		t.Fatalf("Marshal = %s", out)
	}
	err = json.Unmarshal([]byte(`[{"item_id":"V7","count":0,"ts":1794650712000}]`), &evs)
	if ReasonOf(err) != ReasonBadCount {
		t.Fatalf("Unmarshal of a bad event = %v, want bad_count", err)
	}
	if _, err := json.Marshal(Event{}); ReasonOf(err) != ReasonBadItemID {
		t.Fatalf("Marshal of an invalid event = %v, want bad_item_id", err)
	}
}

func TestReasonsStable(t *testing.T) {
	// The values are a wire contract (DLQ header, metric label): changing one is a breaking
	// change, so it must fail a test.
	want := "malformed_json too_large trailing_data unknown_field duplicate_field missing_field bad_item_id bad_count bad_ts bad_region bad_user_id bad_account_age"
	var got []string
	for _, r := range Reasons() {
		got = append(got, string(r))
	}
	if strings.Join(got, " ") != want {
		t.Fatalf("Reasons() = %v", got)
	}
}

// TestParseRFC3339AgainstTime compares the hand-written parser with the standard library
// over random instants, offsets and fraction lengths.
func TestParseRFC3339AgainstTime(t *testing.T) {
	rng := newRand(t)
	for i := 0; i < 20000; i++ {
		ms := MinTSMilli - 86400_000 + rng.Int64N(MaxTSMilli-MinTSMilli+2*86400_000)
		ns := ms*1e6 + rng.Int64N(1e6)
		off := (rng.IntN(2*24*60-1) - (24*60 - 1)) * 60
		tm := time.Unix(0, ns).In(time.FixedZone("", off))
		layouts := []string{time.RFC3339, time.RFC3339Nano, "2006-01-02T15:04:05.000Z07:00", "2006-01-02T15:04:05.000000000Z07:00", "2006-01-02T15:04:05.0Z07:00"}
		s := tm.Format(layouts[rng.IntN(len(layouts))])
		got, problem := parseRFC3339([]byte(s))
		ref, err := time.Parse(time.RFC3339Nano, s)
		if err != nil || problem != "" {
			t.Fatalf("%s: problem %q, time.Parse error %v", s, problem, err)
		}
		if got != ref.UnixMilli() {
			t.Fatalf("%s: got %d, time.Parse gives %d", s, got, ref.UnixMilli())
		}
	}
}

func TestAppendTSMatchesTimeFormat(t *testing.T) {
	rng := newRand(t)
	for i := 0; i < 20000; i++ {
		tm := time.UnixMilli(rng.Int64N(253402300800000)).UTC() // years 1970..9999
		got := string(appendTS(nil, tm))
		if want := tm.Format("2006-01-02T15:04:05.000Z07:00"); got != want {
			t.Fatalf("appendTS = %s, want %s", got, want)
		}
	}
}

// TestPlain8: the eight-byte skip of scanString agrees with a byte-by-byte check, for every
// byte value at every position and for random words.
func TestPlain8(t *testing.T) {
	stop := func(c byte) bool { return c == '"' || c == '\\' || c < 0x20 }
	check := func(w [8]byte) {
		want := true
		for _, c := range w {
			if stop(c) {
				want = false
			}
		}
		if got := plain8(binary.LittleEndian.Uint64(w[:])); got != want {
			t.Fatalf("plain8(%q) = %v, want %v", w[:], got, want)
		}
	}
	for pos := range 8 {
		for v := range 256 {
			for _, fill := range []byte{'a', 0x80, 0xff, 0x21, 0x5d} {
				var w [8]byte
				for i := range w {
					w[i] = fill
				}
				w[pos] = byte(v)
				check(w)
			}
		}
	}
	rng := rand.New(rand.NewPCG(8, 8))
	for range 200_000 {
		var w [8]byte
		binary.LittleEndian.PutUint64(w[:], rng.Uint64())
		check(w)
	}
}

// TestDecodeAt: DecodeAt stamps an event without ts with now and otherwise decodes exactly
// as Decode, errors included; Decode still requires ts.
func TestDecodeAt(t *testing.T) {
	now := time.Date(2026, 11, 14, 10, 5, 12, 345_000_000, time.UTC)
	ev, err := DecodeAt([]byte(`{"item_id":"V7","count":3,"region":"eu"}`), now)
	if err != nil || !ev.TS.Equal(now) || ev.ItemID != "V7" || ev.Count != 3 || ev.Region != "eu" {
		t.Fatalf("without ts: %+v, %v", ev, err)
	}
	if _, err := Decode([]byte(`{"item_id":"V7","count":3}`)); err == nil {
		t.Fatal("Decode took an event without ts")
	}
	for _, b := range []string{
		`{"item_id":"V7","count":3,"ts":"2026-11-13T00:00:00Z"}`,
		`{"item_id":"V7","count":0}`,
		`{"count":1}`,
		`{"item_id":"V7","count":1,"ts":"yesterday"}`,
		`{"item_id":"V7","count":1,"x":1}`,
	} {
		want, werr := Decode([]byte(b))
		got, gerr := DecodeAt([]byte(b), now)
		switch {
		case werr == nil && (gerr != nil || !reflect.DeepEqual(got, want)):
			t.Errorf("%s: DecodeAt %+v %v, Decode %+v", b, got, gerr, want)
		case werr != nil && strings.Contains(b, `"ts"`) && (gerr == nil || gerr.Error() != werr.Error()):
			t.Errorf("%s: DecodeAt error %v, Decode's %v", b, gerr, werr)
		case werr != nil && gerr == nil:
			t.Errorf("%s: DecodeAt accepted what breaks another rule (Decode: %v)", b, werr)
		}
	}
}
