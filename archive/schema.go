package archive

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"trending/internal/setting"
)

// Row is one archived event: the event's fields plus where it sat in the log and when the
// log accepted it. Its struct tags are the Parquet schema; schemas/parquet/views.schema.txt
// is the golden copy (TestSchemaGolden), and docs/format/parquet.md the explanation.
//
// Every column here is required and stays so. New columns may only be added as optional
// (a pointer field with the optional tag), never renamed or retyped, so every file ever
// written stays readable by every reader (docs/format/parquet.md, "Evolution").
type Row struct {
	// ItemID is the event's item_id. Dictionary-encoded: hot items repeat within a file.
	ItemID string `parquet:"item_id,dict"`
	// Count is the number of views, 1..1,000,000 (INT(32, unsigned)).
	Count uint32 `parquet:"count"`
	// TS is the event time in Unix milliseconds, TIMESTAMP(MILLIS, isAdjustedToUTC=true).
	// Rows are sorted by it within a file, so page and row-group statistics let a reader
	// skip by event time.
	TS int64 `parquet:"ts,timestamp(millisecond),delta"`
	// Region is the event's region; "" means none. Few distinct values: dictionary.
	Region string `parquet:"region,dict"`
	// Partition and Offset locate the event in the topic; together they are the event's
	// identity, the key readers deduplicate on.
	Partition int32 `parquet:"kafka_partition"`
	Offset    int64 `parquet:"kafka_offset,delta"`
	// IngestTS is the Kafka record timestamp in Unix milliseconds: when the log accepted the
	// event (or the producer's create time, per the topic's message.timestamp.type). It is
	// taken from the log rather than the archiver's clock so that re-archiving the same
	// offsets writes the same rows.
	IngestTS int64 `parquet:"ingest_ts,timestamp(millisecond),delta"`
	// UserID and AccountAgeDays are the event's optional trending-topics fields,
	// added as optional columns under the evolution rule: files written before them read
	// as "" and nil. UserID is written as null when empty (the optional tag on a string);
	// AccountAgeDays is a pointer because 0 (created today) is not absent. Not dictionary-
	// encoded: user ids hardly repeat within a file.
	UserID         string `parquet:"user_id,optional"`
	AccountAgeDays *int32 `parquet:"account_age_days,optional"`
}

// Column names, for readers that go by name (ClickHouse, SQL over the files).
const (
	ColItemID    = "item_id"
	ColCount     = "count"
	ColTS        = "ts"
	ColRegion    = "region"
	ColPartition = "kafka_partition"
	ColOffset    = "kafka_offset"
	ColIngestTS  = "ingest_ts"
	ColUserID    = "user_id"
	ColAgeDays   = "account_age_days"
)

// schemaName is the Parquet message name; it appears in the golden file.
const schemaName = "trending.views"

// Schema returns the Parquet schema of archived events.
func Schema() *parquet.Schema { return viewsSchema }

var viewsSchema = parquet.SchemaOf(Row{})

func init() {
	// SchemaOf names the message after the Go type; give it a stable name of its own.
	viewsSchema = parquet.NewSchema(schemaName, viewsSchema)
}

// Metadata keys every file carries, so a file copied away from its name still says what it
// holds.
const (
	metaFormat      = "trending.archive.format"
	metaPartition   = "trending.kafka_partition"
	metaFirstOffset = "trending.first_offset"
	metaLastOffset  = "trending.last_offset"
	formatVersion   = "1"
)

// EncodeOptions say how files are laid out. Start from DefaultEncodeOptions.
type EncodeOptions struct {
	// RowGroupRows caps rows per row group; default 131,072 (about 1-2 MiB compressed), so a
	// reader can fetch and skip row groups instead of one unbounded group per file. It must
	// be positive.
	RowGroupRows int64
}

// DefaultRowGroupRows is EncodeOptions.RowGroupRows' default.
const DefaultRowGroupRows = 128 << 10

// DefaultEncodeOptions returns the defaults.
func DefaultEncodeOptions() EncodeOptions { return EncodeOptions{RowGroupRows: DefaultRowGroupRows} }

// zstdCodec compresses every file's pages. One for all files: a codec keeps a pool of zstd
// encoders, and a new encoder allocates and clears its window (megabytes) on first use, so a
// codec per file paid that for every file. The output does not depend on the encoder.
var zstdCodec = &zstd.Codec{Level: zstd.SpeedDefault}

// encodeFile writes rows as one Parquet file. It sorts rows by (ts, offset) in place
// (sortRows, stable): event order makes min/max statistics per page and row group selective
// for time filters, and the offset tie-break makes the bytes a function of the rows alone. partition and the
// offset range are the roll's (the object name's), recorded in the footer.
func encodeFile(rows []Row, partition int32, first, last int64, opt EncodeOptions) ([]byte, error) {
	if opt.RowGroupRows <= 0 {
		return nil, setting.Invalid("RowGroupRows", "%d: must be positive (default %d)", opt.RowGroupRows, DefaultRowGroupRows)
	}
	sortRows(rows)
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[Row](&buf, viewsSchema,
		parquet.Compression(zstdCodec),
		parquet.MaxRowsPerRowGroup(opt.RowGroupRows),
		parquet.DataPageStatistics(true),
		// Declared in each row group's metadata so engines can rely on the order.
		parquet.SortingWriterConfig(parquet.SortingColumns(parquet.Ascending(ColTS), parquet.Ascending(ColOffset))),
		parquet.CreatedBy("trending", "archive", formatVersion),
		parquet.KeyValueMetadata(metaFormat, formatVersion),
		parquet.KeyValueMetadata(metaPartition, strconv.Itoa(int(partition))),
		parquet.KeyValueMetadata(metaFirstOffset, strconv.FormatInt(first, 10)),
		parquet.KeyValueMetadata(metaLastOffset, strconv.FormatInt(last, 10)),
	)
	if _, err := w.Write(rows); err != nil {
		return nil, fmt.Errorf("write parquet rows: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("close parquet writer: %w", err)
	}
	return buf.Bytes(), nil
}

// hourOf returns the UTC hour an event time in Unix milliseconds belongs to.
func hourOf(ms int64) time.Time {
	return time.UnixMilli(ms).UTC().Truncate(time.Hour)
}

// describeFile renders the layout of an encoded file as text: the schema, then per column
// its physical type, encodings, codec and whether it has statistics, then the file's
// sorting columns and metadata keys. TestSchemaGolden compares it with
// schemas/parquet/views.schema.txt, so any change to what readers see shows up in review.
func describeFile(body []byte) (string, error) {
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return "", err
	}
	md := f.Metadata()
	var b strings.Builder
	fmt.Fprintf(&b, "# Parquet layout of archive/views objects, format %s.\n", formatVersion)
	b.WriteString("# Generated by `go test ./archive -run TestSchemaGolden -update`; see docs/format/parquet.md.\n\n")
	b.WriteString(f.Schema().String())
	b.WriteString("\n\ncolumns (physical type, encodings, codec, statistics):\n")
	if len(md.RowGroups) == 0 {
		return "", errors.New("file has no row groups")
	}
	rg := md.RowGroups[0]
	for _, c := range rg.Columns {
		cm := c.MetaData
		encs := make([]string, 0, len(cm.Encoding))
		for _, e := range cm.Encoding {
			encs = append(encs, e.String())
		}
		stats := "min/max"
		if cm.Statistics.MinValue == nil || cm.Statistics.MaxValue == nil {
			stats = "none"
		}
		fmt.Fprintf(&b, "  %-16s %-10s %-40s %-5s %s\n", strings.Join(cm.PathInSchema, "."), cm.Type, strings.Join(encs, ","), cm.Codec, stats)
	}
	b.WriteString("\nsorting columns:")
	for _, sc := range rg.SortingColumns {
		dir := "ASC"
		if sc.Descending {
			dir = "DESC"
		}
		fmt.Fprintf(&b, " %s %s", md.Schema[sc.ColumnIdx+1].Name, dir)
	}
	fmt.Fprintf(&b, "\npage index (column and offset index): %t\n", len(f.ColumnIndexes()) > 0)
	b.WriteString("key/value metadata:")
	keys := make([]string, 0, len(md.KeyValueMetadata))
	for _, kv := range md.KeyValueMetadata {
		keys = append(keys, kv.Key)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s", k)
	}
	b.WriteString("\n")
	return b.String(), nil
}
