package archive

import (
	"bytes"
	"cmp"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// benchRows is a realistic roll: one partition, offsets in order, event times over an hour
// and mostly in order, item ids Zipf-distributed over a million items (hot items repeat),
// a handful of regions.
func benchRows(n int) []Row {
	rng := rand.New(rand.NewPCG(1, 2))
	zipf := rand.NewZipf(rng, 1.1, 1, 1_000_000)
	regions := []string{"", "eu-west", "us-east", "us-west", "ap-south", "sa-east"}
	t0 := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC).UnixMilli()
	rows := make([]Row, n)
	for i := range rows {
		ts := t0 + int64(i)*3_600_000/int64(n)
		if rng.IntN(20) == 0 {
			ts -= rng.Int64N(60_000)
		}
		rows[i] = Row{ItemID: fmt.Sprintf("video-%07d", zipf.Uint64()), Count: uint32(1 + rng.IntN(20)), TS: max(ts, t0),
			Region: regions[rng.IntN(len(regions))], Partition: 7, Offset: 1_000_000 + int64(i), IngestTS: t0 + int64(i)*3_600_000/int64(n) + 150}
	}
	return rows
}

// BenchmarkEncode measures Parquet encoding alone (sort, encode, zstd; no S3): events/s and
// bytes per event in the file. The wire size of the same events as JSON is reported as
// json_B/event for the ratio.
func BenchmarkEncode(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			rows := benchRows(n)
			jsonBytes := 0
			for _, r := range rows {
				jsonBytes += len(fmt.Sprintf(`{"item_id":%q,"count":%d,"ts":"2026-11-14T10:00:00.000Z","region":%q}`, r.ItemID, r.Count, r.Region))
			}
			work := make([]Row, n)
			b.ReportAllocs()
			b.ResetTimer()
			var size int
			for b.Loop() {
				copy(work, rows) // encodeFile sorts in place
				body, err := encodeFile(work, 7, rows[0].Offset, rows[n-1].Offset, DefaultEncodeOptions())
				if err != nil {
					b.Fatal(err)
				}
				size = len(body)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(size)/float64(n), "B/event")
			b.ReportMetric(float64(jsonBytes)/float64(n), "json_B/event")
		})
	}
}

// BenchmarkRead measures reading a file back into rows (no S3, no dedup bookkeeping).
func BenchmarkRead(b *testing.B) {
	rows := benchRows(100_000)
	body, err := encodeFile(slices.Clone(rows), 7, rows[0].Offset, rows[len(rows)-1].Offset, DefaultEncodeOptions())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		n := 0
		if err := readFile(body, func(Row) error { n++; return nil }); err != nil || n != len(rows) {
			b.Fatal(n, err)
		}
	}
	b.ReportMetric(float64(len(rows))*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// baseCodec is the baseline's codec: the same as encodeFile's (zstd at its default level),
// and like it one for all files, so that the baseline too reuses its zstd encoders.
var baseCodec = &zstd.Codec{Level: zstd.SpeedDefault}

// BenchmarkEncodeBaseline is BenchmarkEncode's baseline: parquet-go's GenericWriter alone
// writing the same rows (in arrival order, no sort) with the same codec (baseCodec) and
// otherwise the library's defaults. The ratio of the two events/s, in the same
// run, is what archive's sorting and layout cost on top of the library (BENCHMARKS.md).
func BenchmarkEncodeBaseline(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			rows := benchRows(n)
			b.ReportAllocs()
			var buf bytes.Buffer
			for b.Loop() {
				buf.Reset()
				w := parquet.NewGenericWriter[Row](&buf, viewsSchema, parquet.Compression(baseCodec))
				if _, err := w.Write(rows); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(float64(buf.Len())/float64(n), "B/event")
		})
	}
}

// BenchmarkSortRows is encodeFile's sort alone on a benchmark roll: sortRows against the
// comparison sort of whole rows it replaced (slices.SortFunc by (ts, offset)). Each
// iteration first copies the roll back into place, which "copy" times alone.
func BenchmarkSortRows(b *testing.B) {
	rows := benchRows(100_000)
	work := make([]Row, len(rows))
	b.Run("copy", func(b *testing.B) {
		for b.Loop() {
			copy(work, rows)
		}
	})
	b.Run("sortRows", func(b *testing.B) {
		for b.Loop() {
			copy(work, rows)
			sortRows(work)
		}
	})
	b.Run("SortFunc", func(b *testing.B) {
		for b.Loop() {
			copy(work, rows)
			slices.SortFunc(work, func(a, b Row) int {
				return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(a.Offset, b.Offset))
			})
		}
	})
}

// BenchmarkEncodeRatio runs, in turn in every iteration so that the machine's load falls
// on all of them alike, encodeFile on a roll (ours); the bare library as in
// BenchmarkEncodeBaseline on the same rows in arrival order (base); the bare library on the
// rows already in the file's (ts, offset) order (base_sorted: what the format's order costs
// the library itself); and encodeFile after a comparison sort of the whole rows (sortfunc:
// the sort encodeFile had before sortRows, which then only checks the order). Each arm is
// given the roll copied back into place, untimed (encodeFile sorts in place; about 1 ms for
// 100k rows, BenchmarkSortRows/copy). Each iteration starts with runtime.GC and runs the arms
// in a rotated order, so that the garbage one leaves falls on each of the others alike. Each
// arm is timed in wall time and in the process's CPU time (getrusage), which other work on
// the machine does not inflate. It reports the events/s of each and the ratios to base, in
// wall time and in CPU time: ours/base is the ratio BENCHMARKS.md records.
func BenchmarkEncodeRatio(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			rows := benchRows(n)
			sorted := slices.Clone(rows)
			sortRows(sorted)
			work := make([]Row, n)
			bare := func(rows []Row) {
				var buf bytes.Buffer
				w := parquet.NewGenericWriter[Row](&buf, viewsSchema, parquet.Compression(baseCodec))
				if _, err := w.Write(rows); err != nil {
					b.Fatal(err)
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
			}
			encode := func(rows []Row) {
				if _, err := encodeFile(rows, 7, rows[0].Offset, rows[n-1].Offset, DefaultEncodeOptions()); err != nil {
					b.Fatal(err)
				}
			}
			arms := []struct {
				name string
				run  func()
			}{
				{"ours", func() { encode(work) }},
				{"base", func() { bare(rows) }},
				{"base_sorted", func() { bare(sorted) }},
				{"sortfunc", func() {
					slices.SortFunc(work, func(a, b Row) int {
						return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(a.Offset, b.Offset))
					})
					encode(work)
				}},
			}
			wall := make([]time.Duration, len(arms))
			cpu := make([]time.Duration, len(arms))
			for it := 0; b.Loop(); it++ {
				runtime.GC()
				for r := range arms {
					a := (it + r) % len(arms)
					arm := arms[a]
					copy(work, rows)
					c0, t0 := processCPU(b), time.Now()
					arm.run()
					wall[a] += time.Since(t0)
					cpu[a] += processCPU(b) - c0
				}
			}
			events := float64(n) * float64(b.N)
			for a, arm := range arms {
				b.ReportMetric(events/wall[a].Seconds(), arm.name+"_events/s")
			}
			for a, arm := range arms {
				if arm.name == "base" {
					continue
				}
				b.ReportMetric(wall[1].Seconds()/wall[a].Seconds(), arm.name+"/base")
				b.ReportMetric(cpu[1].Seconds()/cpu[a].Seconds(), arm.name+"/base_cpu")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
