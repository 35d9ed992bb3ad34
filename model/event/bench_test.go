package event

import (
	"encoding/json"
	"testing"
	"time"
)

var benchInputs = []struct {
	name string
	in   []byte
}{
	{"rfc3339", []byte(`{"item_id": "dQw4w9WgXcQ", "count": 3, "ts": "2026-11-14T10:05:12Z", "region": "eu"}`)},
	{"canonical", []byte(`{"item_id":"dQw4w9WgXcQ","count":3,"ts":"2026-11-14T10:05:12.345Z"}`)},
	{"unixmilli", []byte(`{"item_id":"dQw4w9WgXcQ","count":3,"ts":1794650712345,"region":"eu"}`)},
	{"mention", []byte(`{"item_id":"#marathon","count":1,"ts":1794650712345,"region":"eu","user_id":"u-8f3a91c2","account_age_days":412}`)},
}

// BenchmarkDecode compares Decode with a plain encoding/json Unmarshal into a struct (which
// checks none of the rules and leaves ts unparsed) on the same inputs; the ratio of the two
// is the number to track, not the absolute time.
func BenchmarkDecode(b *testing.B) {
	for _, in := range benchInputs {
		b.Run("strict/"+in.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in.in)))
			for b.Loop() {
				if _, err := Decode(in.in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("decoder/"+in.name, func(b *testing.B) {
			var d Decoder
			b.ReportAllocs()
			b.SetBytes(int64(len(in.in)))
			for b.Loop() {
				if _, err := d.Decode(in.in); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("encoding_json/"+in.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(in.in)))
			for b.Loop() {
				var v struct {
					ItemID string          `json:"item_id"`
					Count  uint32          `json:"count"`
					TS     json.RawMessage `json:"ts"`
					Region string          `json:"region"`
					UserID string          `json:"user_id"`
					Age    *int32          `json:"account_age_days"`
				}
				if err := json.Unmarshal(in.in, &v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkDecodeRejected(b *testing.B) {
	in := []byte(`{"item_id":"dQw4w9WgXcQ","count":0,"ts":1794650712345}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(in); err == nil {
			b.Fatal("accepted")
		}
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	e := Event{ItemID: "dQw4w9WgXcQ", Count: 3, TS: time.UnixMilli(1794650712345).UTC(), Region: "eu"}
	buf := make([]byte, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		buf = e.AppendJSON(buf[:0])
	}
}
