package batch_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
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
		{fmt.Sprintf("raw-%drows", rawRows), "SELECT item_id AS i, sum(count) AS v FROM " + raw +
			" FINAL GROUP BY i ORDER BY v DESC, i LIMIT 100"},
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

// BenchmarkLoadRatio: the load of one archive hour of 2M rows into a raw staging table
// (Load, what every build does first) against the server's own bulk rate on the same rows:
// clickhouse-client inserting them as one Native stream from a file (what the server can take
// with no client of ours in the way), less the client's own start (`SELECT 1`, timed in the
// same iteration). Every iteration runs the arms in turn, each insert into a new table, so
// the ratios (the baseline's wall time over ours: ours/server, above 0.7 is the goal; and
// ours/client, with the client's start left in) hold while other work loads the machine.
// Needs clickhouse-client on PATH.
//
//	go test ./batch -run XXX -bench LoadRatio -benchtime 5x
func BenchmarkLoadRatio(b *testing.B) {
	const n = 2_000_000
	client, err := exec.LookPath("clickhouse-client")
	if err != nil {
		b.Skip("clickhouse-client not on PATH: it is the baseline (apt-get install clickhouse-client)")
	}
	src := memArchive{genRows(n, day0)}
	e, o, _ := openCHB(b, false)
	ctx := context.Background()
	host, port, err := net.SplitHostPort(o.Addr)
	if err != nil {
		b.Fatal(err)
	}
	cli := func(stdin io.Reader, stdout io.Writer, query string) {
		cmd := exec.Command(client, "--host", host, "--port", port, "--user", o.Username, "--query", query)
		if o.Password != "" {
			cmd.Env = append(os.Environ(), "CLICKHOUSE_PASSWORD="+o.Password)
			cmd.Args = append(cmd.Args, "--password", o.Password)
		}
		var stderr bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdout, &stderr
		if err := cmd.Run(); err != nil {
			b.Fatalf("clickhouse-client %q: %v: %s", query, err, stderr.String())
		}
	}
	// The baseline's input: the same rows in the same order (offset = generation index) as
	// ClickHouse's own Native format, made once.
	seed, err := e.CreateRawTable(ctx)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.Load(ctx, src, day0, seed, windowset.Groups{}); err != nil {
		b.Fatal(err)
	}
	native := filepath.Join(b.TempDir(), "rows.native")
	f, err := os.Create(native)
	if err != nil {
		b.Fatal(err)
	}
	cli(nil, f, "SELECT kafka_partition, kafka_offset, item_id, count, ts, region FROM "+seed+" ORDER BY kafka_offset FORMAT Native")
	f.Close()
	e.DropTable(seed)
	count := func(table string) uint64 {
		var out bytes.Buffer
		cli(nil, &out, "SELECT count() FROM "+table)
		v, err := strconv.ParseUint(strings.TrimSpace(out.String()), 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		return v
	}
	arms := []struct {
		name string
		run  func(table string)
	}{
		{"ours", func(table string) {
			if _, err := e.Load(ctx, src, day0, table, windowset.Groups{}); err != nil {
				b.Fatal(err)
			}
		}},
		{"client", func(table string) {
			in, err := os.Open(native)
			if err != nil {
				b.Fatal(err)
			}
			defer in.Close()
			cli(in, io.Discard, "INSERT INTO "+table+" (kafka_partition, kafka_offset, item_id, count, ts, region) FORMAT Native")
		}},
		// The client's own start and connection, which the server's rate does not include.
		{"client_start", func(string) { cli(nil, io.Discard, "SELECT 1") }},
	}
	wall := make([]time.Duration, len(arms))
	b.ResetTimer()
	for it := 0; b.Loop(); it++ {
		for r := range arms {
			a := (it + r) % len(arms)
			b.StopTimer()
			table, err := e.CreateRawTable(ctx)
			if err != nil {
				b.Fatal(err)
			}
			runtime.GC()
			b.StartTimer()
			t0 := time.Now()
			arms[a].run(table)
			wall[a] += time.Since(t0)
			b.StopTimer()
			if got := count(table); got != n && arms[a].name != "client_start" {
				b.Fatalf("%s loaded %d rows, want %d", arms[a].name, got, n)
			}
			e.DropTable(table)
			b.StartTimer()
		}
	}
	server := wall[1] - wall[2] // the client's insert less its start
	b.ReportMetric(float64(n)*float64(b.N)/wall[0].Seconds(), "ours_rows/s")
	b.ReportMetric(float64(n)*float64(b.N)/wall[1].Seconds(), "client_rows/s")
	b.ReportMetric(float64(n)*float64(b.N)/server.Seconds(), "server_rows/s")
	b.ReportMetric(wall[2].Seconds()*1e3/float64(b.N), "client_start_ms")
	b.ReportMetric(wall[1].Seconds()/wall[0].Seconds(), "ours/client")
	b.ReportMetric(server.Seconds()/wall[0].Seconds(), "ours/server")
	b.ReportMetric(0, "ns/op")
}
