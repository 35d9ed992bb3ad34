package batch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"trending/archive"
	"trending/internal/itest"
	"trending/model/windowset"
)

// failingArchive yields the rows of rows until after, then fails.
type failingArchive struct {
	memArchive
	after int
}

var errArchive = errors.New("archive read failed")

func (f failingArchive) ReadHour(_ context.Context, _ time.Time, fn func(archive.Row) error) error {
	for i, r := range f.rows {
		if i == f.after {
			return errArchive
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

// TestLoadBlocks: an hour is one INSERT of several blocks (97 rows each here): every row
// arrives once, an empty hour sends nothing, and a load that fails after some blocks
// returns the archive's error and gives its connection up, so a run of failed loads cannot
// use up clickhouse-go's bounded pool (without the abort each held one, and the fifth
// create waited for a connection until its context ended).
func TestLoadBlocks(t *testing.T) {
	e, _, dump := openCH(t)
	ctx := itest.Context(t, 2*time.Minute)
	rows := genRows(1000, day0)
	for _, tc := range []struct {
		name string
		rows []archive.Row
	}{{"1000 rows", rows}, {"97 rows", rows[:97]}, {"98 rows", rows[:98]}, {"empty", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			table, err := e.CreateRawTable(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer e.DropTable(table)
			n, err := e.Load(ctx, memArchive{tc.rows}, day0, table, windowset.Groups{})
			if err != nil || n != len(tc.rows) {
				t.Fatalf("load: %d rows, %v; want %d", n, err, len(tc.rows))
			}
			got := dump("SELECT count(), uniqExact(kafka_partition, kafka_offset), sum(count) FROM " + table)
			var sum uint64
			for _, r := range tc.rows {
				sum += uint64(r.Count)
			}
			if want := fmt.Sprintf("(%d,%d,%d)", len(tc.rows), len(tc.rows), sum); len(got) != 1 || got[0] != want {
				t.Fatalf("table holds %v, want %s", got, want)
			}
		})
	}
	t.Run("failures give the connection up", func(t *testing.T) {
		for i := range 20 {
			table, err := e.CreateRawTable(ctx)
			if err != nil {
				t.Fatalf("create after %d failed loads: %v", i, err)
			}
			_, err = e.Load(ctx, failingArchive{memArchive{rows}, 250}, day0, table, windowset.Groups{})
			e.DropTable(table)
			if !errors.Is(err, errArchive) {
				t.Fatalf("load %d: %v, want the archive's error", i, err)
			}
		}
		table, err := e.CreateRawTable(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer e.DropTable(table)
		if n, err := e.Load(ctx, memArchive{rows}, day0, table, windowset.Groups{}); err != nil || n != len(rows) {
			t.Fatalf("load after 20 failed ones: %d rows, %v", n, err)
		}
	})
}
