package api

import (
	"bytes"
	"slices"
	"time"
	"trending/model"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ArrowMediaType is the media type of an Arrow IPC stream, which analysts ask for with Accept.
const ArrowMediaType = "application/vnd.apache.arrow.stream"

// encodeArrow writes the first n items of l as an Arrow IPC stream of one record batch: a
// column per item field the list's kind carries in Arrow (itemFields, in their column order:
// rank int32, item_id, title, views uint64, exact bool, thumbnail_url (empty when unknown), and
// on a decayed list score float64, on a frequent list views_upper uint64). The list-level
// fields go into the schema metadata as strings under the JSON field names (listFields), so
// one stream carries everything the JSON body does except the objects (baseline,
// reconciliation) and age_seconds, which would make the stream differ from second to second.
func encodeArrow(l model.List, n int) ([]byte, error) {
	md := arrowMetadata(l)
	cols := arrowItemFields(l.KindOf())
	fields := make([]arrow.Field, len(cols))
	for i, c := range cols {
		fields[i] = arrow.Field{Name: c.name, Type: c.typ}
	}
	schema := arrow.NewSchema(fields, &md)

	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i, c := range cols {
		ab := b.Field(i)
		for j := range l.Items[:n] {
			c.appendArrow(ab, &l.Items[j])
		}
	}
	rec := b.NewRecordBatch()
	defer rec.Release()

	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
	if err := w.Write(rec); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// arrowMetadata is the list-level fields l carries in Arrow (listFields' md), in their order.
func arrowMetadata(l model.List) arrow.Metadata {
	fields, values := listValues(&l)
	order := make([]int, 0, len(fields))
	for i, f := range fields {
		if f.md > 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return fields[a].md - fields[b].md })
	keys := make([]string, 0, len(order)+1)
	vals := make([]string, 0, len(order)+1)
	for _, i := range order {
		keys, vals = appendListMetadata(keys, vals, fields[i].name, values[i])
	}
	return arrow.NewMetadata(keys, vals)
}

// rfc3339 formats t as encoding/json does, so Arrow metadata and JSON agree byte for byte.
func rfc3339(t time.Time) string { return t.Format(time.RFC3339Nano) }
