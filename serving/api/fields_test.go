package api

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"trending/model"
)

// jsonNames are the JSON names of a struct type's fields, in order.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// TestFieldTablesMatchWire: ListResponse and ItemResponse, the Go types clients decode the
// body into, have the tables' fields in the tables' order.
func TestFieldTablesMatchWire(t *testing.T) {
	var list, items []string
	for _, f := range listFields {
		list = append(list, f.name)
	}
	for _, f := range itemFields {
		items = append(items, f.name)
	}
	if got, want := jsonNames(reflect.TypeFor[ListResponse]()), append(list, "items"); !slices.Equal(got, want) {
		t.Errorf("ListResponse's fields %v, want listFields' %v", got, want)
	}
	if got := jsonNames(reflect.TypeFor[ItemResponse]()); !slices.Equal(got, items) {
		t.Errorf("ItemResponse's fields %v, want itemFields' %v", got, items)
	}
}

// TestOpenAPIItemFields: the spec's Item (lists of views) and TopicItem (topics lists) name
// exactly the item table's JSON fields of those lists, and TrendingList the list table's.
func TestOpenAPIItemFields(t *testing.T) {
	s := loadSpec(t)
	views := every.but(model.ListTopics)
	for _, c := range []struct {
		schema string
		names  []string
	}{
		{"Item", itemNames(func(f itemField) bool { return f.json&views != 0 })},
		{"TopicItem", itemNames(func(f itemField) bool { return f.json.has(model.ListTopics) })},
		{"TrendingList", listFieldNames(views)},
	} {
		sc := s.resolve(s.Components.Schemas[c.schema])
		var props []string
		for k := range sc.Properties {
			props = append(props, k)
		}
		slices.Sort(props)
		slices.Sort(c.names)
		if !slices.Equal(props, c.names) {
			t.Errorf("schemas/openapi.yaml %s has %v, the field tables %v", c.schema, props, c.names)
		}
	}
}

func itemNames(keep func(itemField) bool) []string {
	var out []string
	for _, f := range itemFields {
		if keep(f) {
			out = append(out, f.name)
		}
	}
	return out
}

func listFieldNames(on kindSet) []string {
	out := []string{"items"}
	for _, f := range listFields {
		if f.on&on != 0 {
			out = append(out, f.name)
		}
	}
	return out
}

// TestAppendJSONValues: the items' strings and floats are written as encoding/json writes them.
func TestAppendJSONValues(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote`, `back\slash`, "<b>&amp;</b>", "tab\tnl\ncr\r\x00\x1f\x7f", "日本語 Ünï", "\u2028\u2029", "bad \xff utf-8", "\U0001F600"} {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		enc.Encode(s)
		if got, want := string(appendJSONString(nil, s)), strings.TrimSuffix(buf.String(), "\n"); got != want {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
	for _, f := range []float64{0, 1, -1, 0.1, 1234.5678, 1e-6, 9.99e-7, 1e-7, 1e-300, 5e-324, 1e20, 1e21, 123456789012345678901234.0, math.MaxFloat64, 1.0 / 3, 2.5e-10} {
		want, _ := json.Marshal(f)
		if got := appendJSONFloat(nil, f); string(got) != string(want) {
			t.Errorf("%v: %s, want %s", f, got, want)
		}
	}
}
