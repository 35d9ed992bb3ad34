package batch_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"trending/archive"
	"trending/batch"
	"trending/internal/objstore"
	"trending/model/windowset"
)

// memArchive serves generated rows for any hour, so a benchmark measures the load, not S3.
type memArchive struct{ rows []archive.Row }

func (m memArchive) ListHour(context.Context, time.Time) ([]objstore.Object, error) { return nil, nil }
func (m memArchive) Fingerprint(context.Context, time.Time) (string, error)         { return "mem", nil }
func (m memArchive) Incomplete(context.Context, time.Time, time.Duration) (string, error) {
	return "", nil
}
func (m memArchive) Dirty(context.Context) ([]archive.Dirty, error) { return nil, nil }
func (m memArchive) ClearDirty(context.Context, []string) error     { return nil }
func (m memArchive) ReadHour(_ context.Context, _ time.Time, fn func(archive.Row) error) error {
	for _, r := range m.rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

func genRows(n int, hour time.Time) []archive.Row {
	rng := rand.New(rand.NewPCG(5, 6))
	rows := make([]archive.Row, n)
	for i := range rows {
		rows[i] = archive.Row{ItemID: "V" + strconv.Itoa(int(rng.ExpFloat64()*2000)), Count: uint32(1 + rng.IntN(5)),
			TS: hour.Add(time.Duration(rng.Int64N(int64(time.Hour)))).UnixMilli(), Partition: int32(i % 8), Offset: int64(i)}
	}
	return rows
}

// BenchmarkLoad measures the raw load into ClickHouse: a column slice per column per
// INSERT against one Append per row, in the same run.
//
//	go test ./batch -run XXX -bench Load -benchtime 3x
func BenchmarkLoad(b *testing.B) {
	const n = 200_000
	src := memArchive{genRows(n, day0)}
	for _, mode := range []struct {
		name     string
		rowByRow bool
	}{{"columnar", false}, {"row-by-row", true}} {
		b.Run(mode.name, func(b *testing.B) {
			e, o, _ := openCHB(b, mode.rowByRow)
			ctx := context.Background()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				raw, err := e.CreateRawTable(ctx)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := e.Load(ctx, src, day0, raw, windowset.Groups{}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				e.DropTable(raw)
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			_ = o
		})
	}
}

// BenchmarkMonth compares a month's top 100 from 30 day rollups with the same month from
// its deduplicated raw rows, both in ClickHouse.
//
//	go test ./batch -run XXX -bench Month -benchtime 5x
func BenchmarkMonth(b *testing.B) {
	const perDay = 40_000
	e, o, _ := openCHB(b, false)
	ctx := context.Background()
	conn, err := o.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close()
	month := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	raw, err := e.CreateRawTable(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer e.DropTable(raw)
	for d := range 30 {
		day := month.AddDate(0, 0, d)
		rows := genRows(perDay, day)
		for i := range rows {
			rows[i].Offset += int64(d * perDay)
		}
		if _, err := e.Load(ctx, memArchive{rows}, day, raw, windowset.Groups{}); err != nil {
			b.Fatal(err)
		}
		// One hour per day stands in for the day's hours: the day rollup is what matters.
		if _, err := e.BuildHours(ctx, memArchive{rows}, day, []batch.Built{{Start: day, Fingerprint: "f", Through: day.Add(time.Hour)}}); err != nil {
			b.Fatal(err)
		}
		if err := e.BuildDays(ctx, month, []batch.Built{{Start: day, Fingerprint: "f", Through: day.AddDate(0, 0, 1)}}); err != nil {
			b.Fatal(err)
		}
	}
	var rawRows, dayRows uint64
	_ = conn.QueryRow(ctx, "SELECT count() FROM "+raw).Scan(&rawRows)
	_ = conn.QueryRow(ctx, "SELECT count() FROM "+o.Database+".rollup_day").Scan(&dayRows)
	for _, c := range []struct{ name, q string }{
		{fmt.Sprintf("rollups-%drows", dayRows), "SELECT item_id, sum(views) AS v FROM " + o.Database + ".rollup_day WHERE toYYYYMM(day) = 202611 GROUP BY item_id ORDER BY v DESC, item_id LIMIT 100"},
		{fmt.Sprintf("raw-%drows", rawRows), "SELECT i, sum(c) AS v FROM (SELECT any(item_id) AS i, any(count) AS c FROM " + raw +
			" GROUP BY kafka_partition, kafka_offset) GROUP BY i ORDER BY v DESC, i LIMIT 100"},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for range b.N {
				rows, err := conn.Query(ctx, c.q)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for rows.Next() {
					n++
				}
				rows.Close()
				if n != 100 {
					b.Fatalf("%d rows, want 100", n)
				}
			}
		})
	}
}
