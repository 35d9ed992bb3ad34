package archive

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite golden files under schemas/parquet")

const goldenSchema = "../schemas/parquet/views.schema.txt"

// TestSchemaGolden pins what every reader of the archive sees: schema, logical types,
// encodings, codec, statistics and sort order, taken from a real encoded file.
func TestSchemaGolden(t *testing.T) {
	body, err := encodeFile(sampleRows(50, 0), 3, 0, 49, DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	got, err := describeFile(body)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(goldenSchema, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(goldenSchema)
	if err != nil {
		t.Fatalf("%v (run `go test ./archive -run TestSchemaGolden -update` to create it)", err)
	}
	if got != string(want) {
		t.Fatalf("Parquet layout changed; if on purpose, check the evolution rule in docs/format/parquet.md and run with -update.\n--- got\n%s\n--- want (%s)\n%s", got, filepath.Clean(goldenSchema), want)
	}
}

// sampleRows returns n events of partition 3 at offsets base.., a few items and regions,
// event times spread over one hour and out of order.
func sampleRows(n int, base int64) []Row {
	t0 := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC).UnixMilli()
	rows := make([]Row, n)
	for i := range rows {
		off := base + int64(i)
		rows[i] = Row{
			ItemID:    "V" + string(rune('A'+i%7)),
			Count:     uint32(1 + i%5),
			TS:        t0 + (off*7919)%3_600_000,
			Region:    []string{"", "eu", "us"}[i%3],
			Partition: 3,
			Offset:    off,
			IngestTS:  t0 + off*10,
			UserID:    []string{"", "", "", "", "u-" + string(rune('a'+i%3))}[i%5],
		}
	}
	return rows
}
