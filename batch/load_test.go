package batch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"trending/archive"
	"trending/batch"
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

// TestHourInBoundedMemory: an hour's build deduplicates its raw rows by (partition, offset)
// in memory that does not grow with the hour's events. An hour of 2,000,000 events (and
// 200,000 repeated offsets the guard must drop) builds with its rollup and input count equal
// to the truth, and the query that deduplicates and aggregates (logged by ClickHouse) peaks
// under 64 MB. The guard was a GROUP BY kafka_partition, kafka_offset, a hash entry an event:
// it peaked at 725 MB here (362 bytes an event) and passed ClickHouse's 3.7 GiB limit at 100M events in issue
// 33's soak.
func TestHourInBoundedMemory(t *testing.T) {
	e, o, dump := openCHWith(t, batch.DefaultClickHouseConfig().ChunkRows, false)
	ctx := clickhouse.Context(itest.Context(t, 5*time.Minute), clickhouse.WithSettings(clickhouse.Settings{"log_queries": 1}))
	const n = 2_000_000
	rows := genRows(n, day0)
	rows = append(rows, rows[:n/10]...) // the same events again: a retried roll
	truth := map[string]uint64{}
	for _, r := range rows[:n] {
		truth[r.ItemID] += uint64(r.Count)
	}
	metas, err := e.BuildHours(ctx, memArchive{rows}, day0, []batch.Built{{Start: day0, Fingerprint: "f", Through: day0.Add(time.Hour)}})
	if err != nil {
		t.Fatal(err)
	}
	if metas[0].InputRows != n {
		t.Fatalf("input rows %d, want %d (each offset once)", metas[0].InputRows, n)
	}
	ids := make([]string, 0, len(truth))
	for id := range truth {
		ids = append(ids, id)
	}
	got, err := e.Counts(ctx, batch.Hour, day0, "", ids)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if got[id] != truth[id] {
			t.Fatalf("item %s: %d views, want %d", id, got[id], truth[id])
		}
	}
	conn, err := o.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.Exec(ctx, "SYSTEM FLUSH LOGS"); err != nil {
		t.Fatal(err)
	}
	peak := dump("SELECT max(memory_usage) FROM system.query_log WHERE type = 2 AND query LIKE 'INSERT INTO " + o.Database + ".tmp_hour%SELECT%'")
	var bytes uint64
	if len(peak) != 1 {
		t.Fatalf("query log: %v", peak)
	}
	if _, err := fmt.Sscan(strings.Trim(peak[0], "()"), &bytes); err != nil || bytes == 0 {
		t.Fatalf("query log: %v (%v): the aggregation was not logged", peak, err)
	}
	t.Logf("the aggregation peaked at %.1f MB", float64(bytes)/(1<<20))
	if bytes > 64<<20 {
		t.Fatalf("the aggregation peaked at %.1f MB, want under 64 MB", float64(bytes)/(1<<20))
	}
}
