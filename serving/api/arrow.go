package api

import (
	"bytes"
	"strconv"
	"strings"
	"time"
	"trending/model"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ArrowMediaType is the media type of an Arrow IPC stream, which analysts ask for with Accept.
const ArrowMediaType = "application/vnd.apache.arrow.stream"

// encodeArrow writes the first n items of l as an Arrow IPC stream of one record batch: columns
// rank (int32), item_id (utf8), title (utf8), views (uint64), exact (bool) and thumbnail_url
// (utf8, empty when unknown; after them, so readers of the first five by position still work),
// and on a decayed list score (float64, what it ranks by), on a frequent list views_upper
// (uint64, the item's proven most views; last). The
// list-level fields go into the schema metadata as strings under the JSON field names (times in RFC 3339,
// stale_partitions comma-separated), so one stream carries everything the JSON body does
// except age_seconds, which would make the stream differ from second to second.
func encodeArrow(l model.List, n int) ([]byte, error) {
	md := arrowMetadata(l)
	fields := []arrow.Field{
		{Name: "rank", Type: arrow.PrimitiveTypes.Int32},
		{Name: "item_id", Type: arrow.BinaryTypes.String},
		{Name: "title", Type: arrow.BinaryTypes.String},
		{Name: "views", Type: arrow.PrimitiveTypes.Uint64},
		{Name: "exact", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "thumbnail_url", Type: arrow.BinaryTypes.String},
	}
	decayed := l.HalfLifeSeconds != 0
	if decayed {
		fields = append(fields, arrow.Field{Name: "score", Type: arrow.PrimitiveTypes.Float64})
	}
	if l.Frequent {
		fields = append(fields, arrow.Field{Name: "views_upper", Type: arrow.PrimitiveTypes.Uint64})
	}
	schema := arrow.NewSchema(fields, &md)

	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	rank := b.Field(0).(*array.Int32Builder)
	id := b.Field(1).(*array.StringBuilder)
	title := b.Field(2).(*array.StringBuilder)
	views := b.Field(3).(*array.Uint64Builder)
	exact := b.Field(4).(*array.BooleanBuilder)
	thumb := b.Field(5).(*array.StringBuilder)
	for _, it := range l.Items[:n] {
		rank.Append(int32(it.Rank))
		id.Append(it.ItemID)
		title.Append(it.Title)
		views.Append(it.Views)
		exact.Append(it.Exact)
		thumb.Append(it.Thumbnail)
		if decayed {
			b.Field(6).(*array.Float64Builder).Append(it.DecayedScore)
		}
		if l.Frequent {
			b.Field(len(fields) - 1).(*array.Uint64Builder).Append(it.ViewsUpper)
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

func arrowMetadata(l model.List) arrow.Metadata {
	window, region := listNames(l)
	keys := []string{"window", "as_of", "version", "source", "status", "exact", "dropped_late", "partial", "computed_at"}
	vals := []string{window, rfc3339(l.AsOf), strconv.FormatInt(l.Version, 10), string(l.Source), string(l.Status),
		strconv.FormatBool(l.Exact), strconv.FormatUint(l.DroppedLate, 10), strconv.FormatBool(l.Incomplete), rfc3339(l.ComputedAt)}
	add := func(k, v string) { keys, vals = append(keys, k), append(vals, v) }
	if region != "" {
		add("region", region)
	}
	if !l.Start.IsZero() {
		add("start", rfc3339(l.Start))
		add("end", rfc3339(l.End))
	}
	if !l.WindowStart.IsZero() {
		add("window_start", rfc3339(l.WindowStart))
	}
	if !l.WindowEnd.IsZero() {
		add("window_end", rfc3339(l.WindowEnd))
	}
	if len(l.StalePartitions) > 0 {
		parts := make([]string, len(l.StalePartitions))
		for i, p := range l.StalePartitions {
			parts[i] = strconv.Itoa(p)
		}
		add("stale_partitions", strings.Join(parts, ","))
	}
	if l.ErrorBound != nil {
		add("error_bound.max_overcount", strconv.FormatFloat(l.ErrorBound.MaxOvercount, 'g', -1, 64))
		add("error_bound.probability", strconv.FormatFloat(l.ErrorBound.Probability, 'g', -1, 64))
	}
	if !l.Boundary.IsZero() {
		add("boundary", rfc3339(l.Boundary))
	}
	if l.Cutoff > 0 {
		add("cutoff", strconv.FormatUint(l.Cutoff, 10))
	}
	if l.HalfLifeSeconds != 0 {
		add("half_life_seconds", strconv.FormatInt(l.HalfLifeSeconds, 10))
	}
	if l.Frequent {
		add("frequent", "true")
		add("guarantee", guarantee(l))
	}
	return arrow.NewMetadata(keys, vals)
}

// rfc3339 formats t as encoding/json does, so Arrow metadata and JSON agree byte for byte.
func rfc3339(t time.Time) string { return t.Format(time.RFC3339Nano) }
