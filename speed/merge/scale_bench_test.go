package merge_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"time"

	"trending/model"
	"trending/model/topk"
	"trending/serving/store"
	"trending/speed/merge"
)

// discardStore takes every list and keeps none: the benchmark measures the merger, and the
// store's writes (one per window and interval) do not grow with the partitions.
type discardStore struct{ puts int }

func (d *discardStore) Put(context.Context, model.List) error { d.puts++; return nil }
func (d *discardStore) Get(context.Context, model.Key) (model.List, error) {
	return model.List{}, store.ErrNotFound
}
func (d *discardStore) Range(context.Context, string, time.Time, time.Time) ([]model.List, error) {
	return nil, nil
}
func (d *discardStore) Since(context.Context, time.Time) ([]model.List, error) { return nil, nil }
func (d *discardStore) Close() error                                           { return nil }

// cpuTime is the process's user plus system CPU time (every thread, the GC's included).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		panic(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkMergeInterval is one merger's work for one publish interval at 32, 320 and 3,200
// partitions: every partition sends one list of m x K = 300 entries for each of the 7
// windows a worker publishes by default (the live hour, day, month and all time, the open
// calendar hour, day and month), as JSON on the wire; the merger decodes each (what
// consumeOnce does), offers it, and publishes the 7 merged top-100 lists. One op is one
// interval; cpu-ms/interval is the process's CPU time (GC included) per interval, so at the
// default --publish-every 1s it is the fraction of a core the merger needs (1,000 = one
// core). Titles are off and the store discards (its 7 writes an interval do not depend on
// the partition count).
//
//	go test ./speed/merge -run '^$' -bench MergeInterval -benchtime 20x
func BenchmarkMergeInterval(b *testing.B) {
	const k, m = 100, 3
	windows := []model.Key{{Window: "hour"}, {Window: "day"}, {Window: "month"}, {Window: "all"}}
	for _, w := range []string{"hour", "day", "month"} { // the default calendar spans
		windows = append(windows, model.Key{Window: w, Start: model.Align(w, t0)})
	}
	for _, parts := range []int{32, 320, 3200} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			// The wire messages of one interval, partition by partition. Items are partitioned
			// (each id on one partition), counts are Zipf-like.
			rng := rand.New(rand.NewPCG(1, uint64(parts)))
			asOf := t0.Add(30 * time.Second)
			var wire [][]byte
			var bytes int
			for part := range parts {
				for _, key := range windows {
					items := make([]topk.Entry, m*k)
					for i := range items {
						items[i] = topk.Entry{Item: fmt.Sprintf("video-%d-%d", part, i), Count: uint64(1e6 / float64(1+i+rng.IntN(50)))}
					}
					p := model.Partial{Window: key.Window, Partition: part, AsOf: asOf, Version: asOf.UnixMilli(), Exact: true, Items: items}
					if !key.Live() {
						p.Start, p.End = key.Start, model.Next(key.Window, key.Start)
					} else {
						p.WindowStart = asOf.Add(-time.Hour)
					}
					enc, err := p.Encode()
					if err != nil {
						b.Fatal(err)
					}
					wire = append(wire, enc)
					bytes += len(enc)
				}
			}
			st := &discardStore{}
			cfg := merge.DefaultConfig()
			cfg.K, cfg.Partitions, cfg.Store = k, parts, st
			mg, err := merge.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			b.ReportAllocs()
			b.SetBytes(int64(bytes))
			b.ResetTimer()
			cpu0 := cpuTime()
			for range b.N {
				for _, msg := range wire {
					p, err := model.DecodePartial(msg)
					if err != nil {
						b.Fatal(err)
					}
					mg.Offer(p)
				}
				if err := mg.Publish(ctx, asOf.Add(time.Second)); err != nil {
					b.Fatal(err)
				}
			}
			cpu := cpuTime() - cpu0
			b.StopTimer()
			if st.puts != b.N*len(windows) {
				b.Fatalf("%d lists written in %d intervals, want %d each", st.puts, b.N, len(windows))
			}
			perInterval := cpu / time.Duration(b.N)
			b.ReportMetric(float64(perInterval.Microseconds())/1e3, "cpu-ms/interval")
			b.ReportMetric(float64(len(windows))/perInterval.Seconds(), "merges/cpu-s")
			b.ReportMetric(float64(len(wire)), "partials/interval")
		})
	}
}

// BenchmarkMergeOnly is the merge alone (topk.Merge of the partitions' 300-entry lists into
// the top 100) at the same partition counts: the part of BenchmarkMergeInterval that is not
// decoding.
//
//	go test ./speed/merge -run '^$' -bench MergeOnly
func BenchmarkMergeOnly(b *testing.B) {
	for _, parts := range []int{32, 320, 3200} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(2, uint64(parts)))
			lists := make([][]topk.Entry, parts)
			for part := range lists {
				lists[part] = make([]topk.Entry, 300)
				for i := range lists[part] {
					lists[part][i] = topk.Entry{Item: fmt.Sprintf("video-%d-%d", part, i), Count: uint64(1e6 / float64(1+i+rng.IntN(50)))}
				}
			}
			b.ReportAllocs()
			for range b.N {
				if got := topk.Merge(100, lists...); len(got) != 100 {
					b.Fatal(len(got))
				}
			}
		})
	}
}
