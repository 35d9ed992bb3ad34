package stream

import (
	"bytes"
	"strconv"
	"strings"

	"trending/model/event"
)

// MalformedKind is one way a message can be bad; Malformed draws them
// uniformly, so the dead-letter path sees every reason.
type MalformedKind struct {
	// Name says what is wrong, for tests and docs.
	Name string
	// Reason is what event.Decode says about it.
	Reason event.Reason
	// make builds the bytes from a valid event's JSON and the event.
	make func(valid []byte, ev event.Event) []byte
}

// MalformedKinds returns every kind of malformed message the generator
// makes.
func MalformedKinds() []MalformedKind { return append([]MalformedKind(nil), malformedKinds...) }

var malformedKinds = []MalformedKind{
	{"truncated JSON", event.ReasonMalformedJSON, func(v []byte, _ event.Event) []byte {
		return append([]byte(nil), v[:len(v)/2]...)
	}},
	{"binary garbage", event.ReasonMalformedJSON, func(v []byte, ev event.Event) []byte {
		return []byte{0xff, 0xfe, 0x00, byte(ev.Count), 0x7f, '{'}
	}},
	{"unknown field", event.ReasonUnknownField, func(v []byte, _ event.Event) []byte {
		return append(append(bytes.TrimSuffix(v, []byte("}")), `,"server":"s-17"`...), '}')
	}},
	{"count 0", event.ReasonBadCount, func(_ []byte, ev event.Event) []byte {
		ev.Count = 0
		return ev.AppendJSON(nil) // AppendJSON writes what it is given
	}},
	{"fractional count", event.ReasonBadCount, func(v []byte, ev event.Event) []byte {
		return bytes.Replace(v, []byte(`"count":`+strconv.Itoa(int(ev.Count))), []byte(`"count":2.5`), 1)
	}},
	{"unparsable ts", event.ReasonBadTS, func(v []byte, ev event.Event) []byte {
		i := bytes.Index(v, []byte(`"ts":"`))
		j := bytes.IndexByte(v[i+6:], '"')
		return append(append(append([]byte(nil), v[:i+6]...), "yesterday at noon"...), v[i+6+j:]...)
	}},
	{"missing ts", event.ReasonMissingField, func(_ []byte, ev event.Event) []byte {
		return []byte(`{"item_id":` + strconv.Quote(ev.ItemID) + `,"count":` + strconv.Itoa(int(ev.Count)) + `}`)
	}},
	{"empty item", event.ReasonBadItemID, func(_ []byte, ev event.Event) []byte {
		ev.ItemID = ""
		return ev.AppendJSON(nil)
	}},
	{"duplicate count", event.ReasonDuplicateField, func(v []byte, _ event.Event) []byte {
		return append(append(bytes.TrimSuffix(v, []byte("}")), `,"count":1`...), '}')
	}},
	{"trailing data", event.ReasonTrailingData, func(v []byte, _ event.Event) []byte {
		return append(append([]byte(nil), v...), " {}"...)
	}},
	{"too large", event.ReasonTooLarge, func(v []byte, _ event.Event) []byte {
		return append([]byte(strings.Repeat(" ", event.MaxEventBytes)), v...)
	}},
}

// malformed draws a kind and builds it from ev.
func (g *Generator) malformed(ev event.Event) Record {
	k := malformedKinds[g.bad.IntN(len(malformedKinds))]
	g.jsonBuf = ev.AppendJSON(g.jsonBuf[:0])
	return Record{Key: ev.ItemID, Raw: k.make(g.jsonBuf, ev), Reason: k.Reason}
}
