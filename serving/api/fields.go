package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"trending/model"
)

// The served list's fields, one table for the items and one for the list, from which both the
// JSON body (render.go) and the Arrow stream (arrow.go) are rendered (issue 29): a new field
// is one row, and a new list kind (model.ListKind) says in each row whether it carries it.
// ListResponse and ItemResponse (wire.go) are the same fields as Go types for clients
// (TestFieldTablesMatchWire); schemas/openapi.yaml's Item and TopicItem list exactly the
// item table's JSON fields (TestOpenAPIItemFields).

// kindSet is a set of list kinds, a bit per kind of model.ListKinds (at most 16).
type kindSet uint16

// every is the set of every list kind.
const every kindSet = math.MaxUint16

// kinds returns the set of ks.
func kinds(ks ...model.ListKind) kindSet {
	var s kindSet
	for _, k := range ks {
		b := kindBit(k)
		if b == 0 {
			panic("BUG: unknown list kind " + string(k))
		}
		s |= b
	}
	return s
}

// kindBit is k's member of a kindSet, 0 for a kind model.ListKinds does not name.
func kindBit(k model.ListKind) kindSet {
	if i := slices.Index(model.ListKinds, k); i >= 0 && i < 16 {
		return 1 << i
	}
	return 0
}

// but returns the set without ks.
func (s kindSet) but(ks ...model.ListKind) kindSet { return s &^ kinds(ks...) }

func (s kindSet) has(k model.ListKind) bool { return s&kindBit(k) != 0 }

// itemField is one field of a served item.
type itemField struct {
	// name is the JSON key and the Arrow column's name.
	name string
	itemValue
	// omitEmpty: the JSON item leaves the field out when it is zero, except on the lists in
	// keep (a topics item's score, which the spec requires).
	omitEmpty bool
	keep      kindSet
	// json is the lists whose JSON items carry the field; arrow those whose Arrow stream has
	// its column (none: the Arrow stream never has it).
	json, arrow kindSet
	// col orders the Arrow columns: columns were added after the first five, so readers by
	// position still work, and the JSON order differs.
	col int
}

// itemFields are a served item's fields in JSON order.
var itemFields = []itemField{
	{name: "rank", itemValue: intValue(func(it *model.Item) int { return it.Rank }), json: every, arrow: every, col: 0},
	{name: "item_id", itemValue: stringValue(func(it *model.Item) string { return it.ItemID }), json: every, arrow: every, col: 1},
	// Always present, empty when unknown, so clients need not special-case it.
	{name: "title", itemValue: stringValue(func(it *model.Item) string { return it.Title }), json: every, arrow: every, col: 2},
	// Topics are not titled: TopicItem has no thumbnail.
	{name: "thumbnail_url", itemValue: stringValue(func(it *model.Item) string { return it.Thumbnail }), omitEmpty: true,
		json: every.but(model.ListTopics), arrow: every, col: 5},
	{name: "views", itemValue: uintValue(func(it *model.Item) uint64 { return it.Views }), json: every, arrow: every, col: 3},
	{name: "exact", itemValue: boolValue(func(it *model.Item) bool { return it.Exact }), json: every, arrow: every, col: 4},
	{name: "views_upper", itemValue: uintValue(func(it *model.Item) uint64 { return it.ViewsUpper }), omitEmpty: true,
		json: kinds(model.ListFrequent), arrow: kinds(model.ListFrequent), col: 7},
	// What a decayed or a topics list ranks by.
	{name: "score", itemValue: floatValue(itemScore), omitEmpty: true, keep: kinds(model.ListTopics),
		json: kinds(model.ListScored, model.ListTopics), arrow: kinds(model.ListScored), col: 6},
	{name: "expected", itemValue: floatValue(func(it *model.Item) float64 { return topic(it).Expected }), omitEmpty: true, json: kinds(model.ListTopics)},
	{name: "new_share", itemValue: floatValue(func(it *model.Item) float64 { return topic(it).NewShare }), omitEmpty: true, json: kinds(model.ListTopics)},
	{name: "no_history", itemValue: boolValue(func(it *model.Item) bool { return topic(it).NoHistory }), omitEmpty: true, json: kinds(model.ListTopics)},
	{name: "review", itemValue: boolValue(func(it *model.Item) bool { return topic(it).Review }), omitEmpty: true, json: kinds(model.ListTopics)},
}

// itemScore is what an item's list ranks it by, when not views: a topic's score or a decayed
// list's score.
func itemScore(it *model.Item) float64 {
	if it.Topic != nil {
		return it.Topic.Score
	}
	return it.DecayedScore
}

var noTopic model.Topic

func topic(it *model.Item) *model.Topic {
	if it.Topic == nil {
		return &noTopic
	}
	return it.Topic
}

// itemValue is how one item field is read, written as JSON and appended to an Arrow column.
type itemValue struct {
	typ arrow.DataType
	// appendJSON appends the value and reports whether it is non-zero.
	appendJSON func(b []byte, it *model.Item) ([]byte, bool)
	// appendArrow appends the value to a builder of typ.
	appendArrow func(ab array.Builder, it *model.Item)
}

func intValue(get func(*model.Item) int) itemValue {
	return itemValue{arrow.PrimitiveTypes.Int32,
		func(b []byte, it *model.Item) ([]byte, bool) {
			v := get(it)
			return strconv.AppendInt(b, int64(v), 10), v != 0
		},
		func(ab array.Builder, it *model.Item) { ab.(*array.Int32Builder).Append(int32(get(it))) }}
}

func uintValue(get func(*model.Item) uint64) itemValue {
	return itemValue{arrow.PrimitiveTypes.Uint64,
		func(b []byte, it *model.Item) ([]byte, bool) {
			v := get(it)
			return strconv.AppendUint(b, v, 10), v != 0
		},
		func(ab array.Builder, it *model.Item) { ab.(*array.Uint64Builder).Append(get(it)) }}
}

func stringValue(get func(*model.Item) string) itemValue {
	return itemValue{arrow.BinaryTypes.String,
		func(b []byte, it *model.Item) ([]byte, bool) { v := get(it); return appendJSONString(b, v), v != "" },
		func(ab array.Builder, it *model.Item) { ab.(*array.StringBuilder).Append(get(it)) }}
}

func boolValue(get func(*model.Item) bool) itemValue {
	return itemValue{arrow.FixedWidthTypes.Boolean,
		func(b []byte, it *model.Item) ([]byte, bool) { v := get(it); return strconv.AppendBool(b, v), v },
		func(ab array.Builder, it *model.Item) { ab.(*array.BooleanBuilder).Append(get(it)) }}
}

func floatValue(get func(*model.Item) float64) itemValue {
	return itemValue{arrow.PrimitiveTypes.Float64,
		func(b []byte, it *model.Item) ([]byte, bool) { v := get(it); return appendJSONFloat(b, v), v != 0 },
		func(ab array.Builder, it *model.Item) { ab.(*array.Float64Builder).Append(get(it)) }}
}

// appendItemJSON appends it as the JSON object a list of kind k serves.
func appendItemJSON(b []byte, it *model.Item, k model.ListKind) []byte {
	b = append(b, '{')
	first, bit := true, kindBit(k)
	for i := range itemFields {
		f := &itemFields[i]
		if f.json&bit == 0 {
			continue
		}
		mark := len(b)
		if !first {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f.name...)
		b = append(b, '"', ':')
		var set bool
		if b, set = f.appendJSON(b, it); !set && f.omitEmpty && f.keep&bit == 0 {
			b = b[:mark]
			continue
		}
		first = false
	}
	return append(b, '}')
}

// arrowItemFields returns the item fields a list of kind k's Arrow stream has, in column order.
func arrowItemFields(k model.ListKind) []*itemField {
	var out []*itemField
	for i := range itemFields {
		if itemFields[i].arrow.has(k) {
			out = append(out, &itemFields[i])
		}
	}
	slices.SortFunc(out, func(a, b *itemField) int { return a.col - b.col })
	return out
}

// appendJSONString appends s as encoding/json writes it with HTML escaping off (the items'
// encoding since they were first served).
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			enc.Encode(s) // a string always encodes
			return append(b, bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONFloat appends f as encoding/json writes a float64 (which is how the item's floats
// were first served): the shortest decimal, exponent form below 1e-6 and from 1e21, the
// exponent without a leading zero. A NaN or infinity, which no valid list holds, is a bug.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		panic("BUG: encode item: unsupported value " + strconv.FormatFloat(f, 'g', -1, 64))
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

// listField is one list-level field of a served list.
type listField struct {
	// name is the JSON key and the Arrow schema metadata's key.
	name string
	// get reads the value, encoded as encoding/json encodes it (HTML escaped, as the list's
	// fields were first served); nil for age_seconds, the one field written per request.
	get func(l *model.List) any
	// omitEmpty: the JSON body and the Arrow metadata leave it out when it is zero.
	omitEmpty bool
	// on is the lists that carry it.
	on kindSet
	// md is the field's place in the Arrow schema metadata (1 first), 0 when the stream does
	// not carry it (objects, and the age that would make the stream change every second).
	// Values are strings: times RFC 3339, numbers decimal, lists comma-separated, an
	// object's fields under name.field.
	md int
}

// listFields are a served list's fields in JSON order, before its items.
var listFields = []listField{
	{name: "window", get: func(l *model.List) any { w, _ := listNames(*l); return w }, on: every, md: 1},
	// The group dimension's value of a list per group value.
	{name: "region", get: func(l *model.List) any { _, r := listNames(*l); return r }, omitEmpty: true, on: every, md: 10},
	{name: "start", get: func(l *model.List) any { return l.Start }, omitEmpty: true, on: every, md: 11},
	{name: "end", get: func(l *model.List) any { return l.End }, omitEmpty: true, on: every, md: 12},
	{name: "window_start", get: func(l *model.List) any { return l.WindowStart }, omitEmpty: true, on: every, md: 13},
	{name: "window_end", get: func(l *model.List) any { return l.WindowEnd }, omitEmpty: true, on: every, md: 14},
	{name: "as_of", get: func(l *model.List) any { return l.AsOf }, on: every, md: 2},
	{name: "age_seconds", on: every},
	{name: "version", get: func(l *model.List) any { return l.Version }, on: every, md: 3},
	{name: "source", get: func(l *model.List) any { return string(l.Source) }, on: every, md: 4},
	{name: "status", get: func(l *model.List) any { return string(l.Status) }, on: every, md: 5},
	{name: "exact", get: func(l *model.List) any { return l.Exact }, on: every, md: 6},
	{name: "dropped_late", get: func(l *model.List) any { return l.DroppedLate }, on: every, md: 7},
	{name: "partial", get: func(l *model.List) any { return l.Incomplete }, on: every, md: 8},
	{name: "stale_partitions", get: func(l *model.List) any { return l.StalePartitions }, omitEmpty: true, on: every, md: 15},
	{name: "error_bound", get: func(l *model.List) any { return l.ErrorBound }, omitEmpty: true, on: every, md: 16},
	{name: "baseline", get: func(l *model.List) any { return l.Baseline }, omitEmpty: true, on: kinds(model.ListTopics)},
	{name: "computed_at", get: func(l *model.List) any { return l.ComputedAt }, on: every, md: 9},
	{name: "reconciliation", get: func(l *model.List) any { return l.Reconciliation }, omitEmpty: true, on: every},
	{name: "boundary", get: func(l *model.List) any { return l.Boundary }, omitEmpty: true, on: kinds(model.ListSince), md: 17},
	{name: "cutoff", get: func(l *model.List) any { return l.Cutoff }, omitEmpty: true, on: every, md: 18},
	{name: "half_life_seconds", get: func(l *model.List) any { return l.HalfLifeSeconds }, omitEmpty: true, on: kinds(model.ListScored), md: 19},
	{name: "frequent", get: func(l *model.List) any { return l.Frequent }, omitEmpty: true, on: kinds(model.ListFrequent), md: 20},
	{name: "guarantee", get: func(l *model.List) any { return guarantee(*l) }, omitEmpty: true, on: kinds(model.ListFrequent), md: 21},
}

// ageField is the list field written per request.
const ageField = "age_seconds"

// listValues returns the list fields l carries, in JSON order, with their values; age_seconds
// has a nil value.
func listValues(l *model.List) (fields []*listField, values []any) {
	k := l.KindOf()
	for i := range listFields {
		f := &listFields[i]
		if !f.on.has(k) {
			continue
		}
		var v any
		if f.get != nil {
			v = f.get(l)
			if f.omitEmpty && isZero(v) {
				continue
			}
		}
		fields, values = append(fields, f), append(values, v)
	}
	return fields, values
}

// isZero reports whether v is its type's zero value, as omitempty and omitzero see it.
func isZero(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case bool:
		return !x
	case int64:
		return x == 0
	case uint64:
		return x == 0
	case time.Time:
		return x.IsZero()
	case []int:
		return len(x) == 0
	case *model.Bound:
		return x == nil
	case *model.Baseline:
		return x == nil
	case *model.Reconciliation:
		return x == nil
	}
	panic(fmt.Sprintf("BUG: list field of type %T", v))
}

// appendListMetadata adds a field's Arrow metadata entries.
func appendListMetadata(keys, vals []string, name string, v any) ([]string, []string) {
	add := func(k, s string) { keys, vals = append(keys, k), append(vals, s) }
	switch x := v.(type) {
	case string:
		add(name, x)
	case bool:
		add(name, strconv.FormatBool(x))
	case int64:
		add(name, strconv.FormatInt(x, 10))
	case uint64:
		add(name, strconv.FormatUint(x, 10))
	case time.Time:
		add(name, rfc3339(x))
	case []int:
		parts := make([]string, len(x))
		for i, p := range x {
			parts[i] = strconv.Itoa(p)
		}
		add(name, strings.Join(parts, ","))
	case *model.Bound:
		add(name+".max_overcount", strconv.FormatFloat(x.MaxOvercount, 'g', -1, 64))
		add(name+".probability", strconv.FormatFloat(x.Probability, 'g', -1, 64))
	default:
		panic("BUG: list field " + name + " has no Arrow metadata form")
	}
	return keys, vals
}
