package merge_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
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
		windows = append(windows, model.Key{Window: w, Start: model.Period(w).Align(t0)})
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
						p.Start, p.End = key.Start, model.Period(key.Window).Next(key.Start)
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

// BenchmarkMergeTwoLevels is BenchmarkMergeInterval's interval merged in two levels
// (shard.go): G shard mergers, each decoding, offering and merging its partitions' partials
// (views partition p in shard p mod G) and encoding one shard partial per window, then the
// top merger decoding the G shard partials of each window, merging them and publishing the
// 7 lists. groups=1 is the one-level merger of the same run, the baseline. Each level's CPU
// is measured on its own (getrusage around it); a shard merger's is the groups' total over
// G, as they are the same size. Every merger is its own process in a deployment, so the
// busiest one, max(shard, top), is what the interval needs of one core at --publish-every
// 1s. The lists are checked equal to the one-level merger's.
//
//	go test ./speed/merge -run '^$' -bench MergeTwoLevels -benchtime 3x
func BenchmarkMergeTwoLevels(b *testing.B) {
	const k, m = 100, 3
	windows := []model.Key{{Window: "hour"}, {Window: "day"}, {Window: "month"}, {Window: "all"}}
	for _, w := range []string{"hour", "day", "month"} {
		windows = append(windows, model.Key{Window: w, Start: model.Period(w).Align(t0)})
	}
	for _, c := range []struct{ parts, groups int }{{320, 1}, {320, 4}, {3200, 1}, {3200, 8}, {3200, 32}} {
		b.Run(fmt.Sprintf("partitions=%d/groups=%d", c.parts, c.groups), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, uint64(c.parts)))
			asOf := t0.Add(30 * time.Second)
			wire := make([][][]byte, c.groups) // by group
			var bytes int
			for part := range c.parts {
				for _, key := range windows {
					items := make([]topk.Entry, m*k)
					for i := range items {
						items[i] = topk.Entry{Item: fmt.Sprintf("video-%d-%d", part, i), Count: uint64(1e6 / float64(1+i+rng.IntN(50)))}
					}
					p := model.Partial{Window: key.Window, Partition: part, AsOf: asOf, Version: asOf.UnixMilli(), Exact: true, Items: items}
					if !key.Live() {
						p.Start, p.End = key.Start, model.Period(key.Window).Next(key.Start)
					} else {
						p.WindowStart = asOf.Add(-time.Hour)
					}
					enc, err := p.Encode()
					if err != nil {
						b.Fatal(err)
					}
					wire[part%c.groups] = append(wire[part%c.groups], enc)
					bytes += len(enc)
				}
			}
			st := &discardStore{}
			cfg := merge.DefaultConfig()
			cfg.K, cfg.Partitions, cfg.Store = k, c.parts, st
			top, err := merge.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			var emitted [][]byte
			gms := make([]*merge.Merger, c.groups)
			if c.groups > 1 {
				for g := range gms {
					gc := merge.DefaultConfig()
					gc.K, gc.Shard = k, merge.DefaultShard(g)
					gc.Shard.Emit = func(_ context.Context, ps []model.Partial) error {
						for _, p := range ps {
							enc, err := p.Encode()
							if err != nil {
								return err
							}
							emitted = append(emitted, enc)
						}
						return nil
					}
					if gms[g], err = merge.New(gc); err != nil {
						b.Fatal(err)
					}
				}
			}
			ctx := context.Background()
			decodeOffer := func(m *merge.Merger, msgs [][]byte) {
				for _, msg := range msgs {
					p, err := model.DecodePartial(msg)
					if err != nil {
						b.Fatal(err)
					}
					m.Offer(p)
				}
			}
			b.ReportAllocs()
			b.SetBytes(int64(bytes))
			b.ResetTimer()
			var shardCPU, topCPU time.Duration
			for range b.N {
				emitted = emitted[:0]
				var topIn [][]byte
				if c.groups == 1 {
					topIn = wire[0]
				} else {
					cpu0 := cpuTime()
					for g, gm := range gms {
						decodeOffer(gm, wire[g])
						if err := gm.Publish(ctx, asOf.Add(time.Second)); err != nil {
							b.Fatal(err)
						}
					}
					shardCPU += cpuTime() - cpu0
					topIn = emitted
				}
				cpu0 := cpuTime()
				decodeOffer(top, topIn)
				if err := top.Publish(ctx, asOf.Add(time.Second)); err != nil {
					b.Fatal(err)
				}
				topCPU += cpuTime() - cpu0
			}
			b.StopTimer()
			if st.puts != b.N*len(windows) {
				b.Fatalf("%d lists written in %d intervals, want %d each", st.puts, b.N, len(windows))
			}
			if c.groups > 1 {
				// The same lists as one merger over every partition.
				one, _ := merge.New(cfg)
				for g := range wire {
					decodeOffer(one, wire[g])
				}
				for _, key := range windows {
					want, _, _ := one.Build(key)
					got, _, _ := top.Build(key)
					if !reflect.DeepEqual(got, want) {
						b.Fatalf("%s: two levels differ from one", key)
					}
				}
			}
			n := time.Duration(b.N)
			perShard := shardCPU / n / time.Duration(c.groups)
			b.ReportMetric(float64((topCPU/n).Microseconds())/1e3, "top-cpu-ms/interval")
			b.ReportMetric(float64(perShard.Microseconds())/1e3, "group-cpu-ms/interval")
			b.ReportMetric(float64(max(perShard, topCPU/n).Microseconds())/1e3, "busiest-cpu-ms/interval")
		})
	}
}
