package archive

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"trending/internal/itest"
)

// TestPyarrowReadsOurFiles has pyarrow, a second Parquet implementation, read a file we
// wrote and agree with us on rows, column names and types, every value (by checksum), the
// statistics on ts and the declared sort order. Without pyarrow it skips, unless the
// integration environment is set (make test), where it fails: that run must check it.
func TestPyarrowReadsOurFiles(t *testing.T) {
	if err := exec.Command("python3", "-c", "import pyarrow").Run(); err != nil {
		if os.Getenv(itest.EnvS3) != "" {
			t.Fatalf("pyarrow is not importable (%v): install it with `pip install pyarrow`", err)
		}
		t.Skip("pyarrow not installed: `pip install pyarrow` to check our files against another Parquet reader")
	}
	rows := sampleRows(3000, 5000)
	rows[1].ItemID = "vidéo-日本-🎬" // multi-byte UTF-8 must survive
	rows[2].Region = "ap-southeast-1"
	body, err := encodeFile(rows, 3, 5000, 7999, EncodeOptions{RowGroupRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "p0003-o000000005000-o000000007999.parquet")
	if err := os.WriteFile(path, body, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("python3", "testdata/pyarrow_check.py", path).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("pyarrow_check.py: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var got struct {
		Rows      int               `json:"rows"`
		RowGroups int               `json:"row_groups"`
		Columns   [][2]string       `json:"columns"`
		Checksum  string            `json:"checksum"`
		TSStats   bool              `json:"ts_stats"`
		Sorting   []string          `json:"sorting"`
		Metadata  map[string]string `json:"metadata"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}

	h := sha256.New()
	n := 0
	if err := readFile(body, func(r Row) error {
		n++
		_, err := fmt.Fprintf(h, "%s\t%d\t%d\t%s\t%d\t%d\t%d\n", r.ItemID, r.Count, r.TS, r.Region, r.Partition, r.Offset, r.IngestTS)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	want := [][2]string{
		{ColItemID, "string"}, {ColCount, "uint32"}, {ColTS, "timestamp[ms, tz=UTC]"}, {ColRegion, "string"},
		{ColPartition, "int32"}, {ColOffset, "int64"}, {ColIngestTS, "timestamp[ms, tz=UTC]"},
		{ColUserID, "string"}, {ColAgeDays, "int32"},
	}
	if got.Rows != n || n != len(rows) {
		t.Errorf("pyarrow read %d rows, we read %d, wrote %d", got.Rows, n, len(rows))
	}
	if got.RowGroups != 3 {
		t.Errorf("pyarrow sees %d row groups, want 3", got.RowGroups)
	}
	if !slices.Equal(got.Columns, want) {
		t.Errorf("pyarrow columns %v\nwant %v", got.Columns, want)
	}
	if sum := hex.EncodeToString(h.Sum(nil)); got.Checksum != sum {
		t.Errorf("pyarrow values checksum %s, ours %s", got.Checksum, sum)
	}
	if !got.TSStats {
		t.Error("pyarrow finds no min/max statistics on ts in some row group")
	}
	if !slices.Equal(got.Sorting, []string{ColTS, ColOffset}) {
		t.Errorf("pyarrow sorting columns %v, want [ts kafka_offset]", got.Sorting)
	}
	if got.Metadata[metaFirstOffset] != "5000" || got.Metadata[metaLastOffset] != "7999" || got.Metadata[metaPartition] != "3" {
		t.Errorf("pyarrow metadata %v", got.Metadata)
	}
}
