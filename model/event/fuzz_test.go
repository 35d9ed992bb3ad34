package event

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzDecode checks, for any input: Decode never panics; an accepted event is valid JSON,
// passes Validate, agrees with encoding/json on every field and survives a canonical
// re-encode; a rejection is always a *DecodeError, and malformed_json is only ever said of
// input that encoding/json also rejects. A reused Decoder, fresh from a message that set
// every field through escapes, gives the same event or the same error.
func FuzzDecode(f *testing.F) {
	seeds := []string{
		`{"item_id": "V7", "count": 3, "ts": "2026-11-14T10:05:12Z", "region": "eu"}`,
		`{"item_id":"V7","count":3,"ts":1794650712345}`,
		`{"item_id":"a\"b\\c\/d\u00e9\ud83c\udfac","count":1000000,"ts":"2026-11-14t10:05:12.123456789-11:30"}`,
		`{"item\u005fid":"V7","count":3,"ts":"2026-11-14T10:05:12Z","region":""}`,
		`{"item_id":"V7","count":3.0,"ts":"2026-11-14T10:05:12Z"}`,
		`{"item_id":"V7","item_id":"V7","count":3,"ts":"2026-11-14T10:05:12Z"}`,
		`{"item_id":"\ud800","count":3,"ts":"2026-11-14T10:05:12Z"}`,
		`{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12Z"} {}`,
		`{"item_id":"V7","count":1,"ts":1794650712345,"user_id":"u\u00e9","account_age_days":0}`,
		`{"item_id":"V7","count":1,"ts":1794650712345,"account_age_days":100001}`,
		`{"itemid":"V7"}`, `{}`, ``, `[]`, `{"count":-0}`, `{"ts":"2000-01-01T00:30:00+01:00"}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	files, _ := filepath.Glob(filepath.Join(schemaTestdata, "*.json"))
	for _, name := range files {
		if b, err := os.ReadFile(name); err == nil {
			f.Add(b)
		}
	}
	dirty := []byte(`{"item_id":"\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9","count":999999,"ts":"2099-12-31T23:59:59.999Z",` +
		`"region":"r\u00e9gion-\u00e9\u00e9\u00e9","user_id":"u\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9","account_age_days":99999}`)
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		var dec Decoder
		if _, derr := dec.Decode(dirty); derr != nil {
			t.Fatalf("dirty seed rejected: %v", derr)
		}
		fs, rerr := dec.Decode(b)
		if (err == nil) != (rerr == nil) || (err != nil && err.Error() != rerr.Error()) {
			t.Fatalf("reused Decoder says %v, Decode says %v", rerr, err)
		}
		if err == nil && fs.Event() != e {
			t.Fatalf("reused Decoder gives %+v, Decode %+v", fs.Event(), e)
		}
		if err != nil {
			de, ok := err.(*DecodeError)
			if !ok {
				t.Fatalf("error %T is not *DecodeError", err)
			}
			if de.Reason == ReasonMalformedJSON && json.Valid(b) && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{")) {
				t.Fatalf("valid JSON object classified malformed: %v", err)
			}
			return
		}
		if !json.Valid(b) {
			t.Fatalf("accepted invalid JSON")
		}
		if err := e.Validate(); err != nil {
			t.Fatalf("accepted an event Validate rejects: %v", err)
		}
		if e.TS.Location() != e.TS.UTC().Location() || e.TS.Nanosecond()%1e6 != 0 {
			t.Fatalf("ts not UTC milliseconds: %v", e.TS)
		}
		var ref struct {
			ItemID string          `json:"item_id"`
			Count  uint32          `json:"count"`
			TS     json.RawMessage `json:"ts"`
			Region string          `json:"region"`
			UserID string          `json:"user_id"`
			Age    *int32          `json:"account_age_days"`
		}
		if err := json.Unmarshal(b, &ref); err != nil {
			t.Fatalf("encoding/json rejects an accepted event: %v", err)
		}
		if ref.ItemID != e.ItemID || ref.Count != e.Count || ref.Region != e.Region || ref.UserID != e.UserID ||
			(ref.Age != nil) != e.HasAccountAge || (ref.Age != nil && *ref.Age != e.AccountAgeDays) {
			t.Fatalf("disagrees with encoding/json: %+v vs %+v", e, ref)
		}
		enc := e.AppendJSON(nil)
		again, err := Decode(enc)
		if err != nil || again != e {
			t.Fatalf("re-encoded %s decodes to %+v, %v; want %+v", enc, again, err, e)
		}
		if enc2 := again.AppendJSON(nil); !bytes.Equal(enc, enc2) {
			t.Fatalf("canonical form not stable: %s vs %s", enc, enc2)
		}
	})
}

// FuzzEncodeDecode builds events in Go: an event Validate accepts must encode to one Decode
// returns unchanged (after UTC and millisecond normalisation), and an event Validate rejects
// must be rejected by Decode for the same Reason (or too_large).
func FuzzEncodeDecode(f *testing.F) {
	f.Add("V7", uint32(3), int64(1794650712345_123456), "eu", "", int32(-1))
	f.Add("", uint32(0), int64(0), "\x7f", "u\x00", int32(0))
	f.Add("a\"\\\u0085", uint32(1000001), int64(-1), "ü", "user-1", int32(100001))
	f.Fuzz(func(t *testing.T, item string, count uint32, nanos int64, region, user string, age int32) {
		// age -1 stands for no account_age_days; other negatives are invalid ages.
		e := Event{ItemID: item, Count: count, TS: time.Unix(0, nanos), Region: region, UserID: user}
		if age != -1 {
			e.AccountAgeDays, e.HasAccountAge = age, true
		}
		verr := e.Validate()
		got, derr := Decode(e.AppendJSON(nil))
		// A huge invalid value may make the message too large before its field is read.
		if ReasonOf(verr) != ReasonOf(derr) && !(verr != nil && ReasonOf(derr) == ReasonTooLarge) {
			t.Fatalf("Validate says %v, Decode says %v", verr, derr)
		}
		if verr != nil {
			return
		}
		want := e
		want.TS = time.UnixMilli(e.TS.UnixMilli()).UTC()
		if got != want {
			t.Fatalf("Decode(AppendJSON(e)) = %+v, want %+v", got, want)
		}
	})
}
