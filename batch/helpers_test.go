package batch_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"trending/archive"
	"trending/batch"
	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/model"
	chddl "trending/schemas/clickhouse"
	"trending/serving/store"
	boltstore "trending/serving/store/bolt"
	chstore "trending/serving/store/clickhouse"
)

// day0 is the UTC day the generated archive covers (plus the first hours of the next).
var day0 = time.Date(2026, 11, 14, 0, 0, 0, 0, time.UTC)

// fixture is a generated archive in a fresh MinIO bucket, with the truth it must yield.
type fixture struct {
	t     *testing.T
	obj   *objstore.Client
	arc   *archive.Reader
	truth map[time.Time]map[string]uint64 // hour -> item -> views, each (partition, offset) once
	// regional is the truth of each region's events (the lists per group value).
	regional map[string]map[time.Time]map[string]uint64
	next     map[int32]int64 // next offset per partition
	rng      *rand.Rand
	regRng   *rand.Rand // regions: apart, so the items drawn are those of a stream without them
}

// objConfig is the object store at endpoint: objstore's defaults with these set.
func objConfig(endpoint, bucket, access, secret string) objstore.Config {
	c := objstore.DefaultConfig()
	c.Endpoint, c.Bucket, c.AccessKey, c.SecretKey = endpoint, bucket, access, secret
	return c
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	cfg := itest.S3(t)
	ctx := itest.Context(t, time.Minute)
	obj, err := objstore.New(ctx, objConfig(cfg.Endpoint, itest.Name(t, "batch"), cfg.AccessKey, cfg.SecretKey))
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, obj: obj, arc: archive.NewReader(obj), truth: map[time.Time]map[string]uint64{},
		regional: map[string]map[time.Time]map[string]uint64{}, next: map[int32]int64{}, rng: rand.New(rand.NewPCG(1, 2)), regRng: rand.New(rand.NewPCG(3, 4))}
}

// item draws a skewed item id: a few hot items and a long tail.
func (f *fixture) item() string {
	if f.rng.IntN(3) == 0 {
		return fmt.Sprintf("V%d", f.rng.IntN(5))
	}
	return fmt.Sprintf("V%d", 5+f.rng.IntN(200))
}

// roll archives n new events of partition p with event times spread over [from, from+span),
// one object per hour touched, as the archiver names them, and adds them to the truth.
// It returns the rows per hour written, so a test can write them again (a retried roll).
func (f *fixture) roll(p int32, n int, from time.Time, span time.Duration) map[time.Time][]archive.Row {
	f.t.Helper()
	first := f.next[p]
	byHour := map[time.Time][]archive.Row{}
	for i := range n {
		ts := from.Add(time.Duration(f.rng.Int64N(int64(span))))
		r := archive.Row{ItemID: f.item(), Count: uint32(1 + f.rng.IntN(5)), TS: ts.UnixMilli(), Partition: p, Offset: first + int64(i), IngestTS: ts.UnixMilli()}
		r.Region = regions[f.regRng.IntN(len(regions))]
		h := ts.Truncate(time.Hour)
		byHour[h] = append(byHour[h], r)
		if f.truth[h] == nil {
			f.truth[h] = map[string]uint64{}
		}
		f.truth[h][r.ItemID] += uint64(r.Count)
		if r.Region != "" {
			rt := f.regional[r.Region]
			if rt == nil {
				rt = map[time.Time]map[string]uint64{}
				f.regional[r.Region] = rt
			}
			if rt[h] == nil {
				rt[h] = map[string]uint64{}
			}
			rt[h][r.ItemID] += uint64(r.Count)
		}
	}
	f.next[p] = first + int64(n)
	f.write(p, first, first+int64(n)-1, byHour)
	return byHour
}

// write puts one object per hour under the archive layout (docs/format/parquet.md).
func (f *fixture) write(p int32, first, last int64, byHour map[time.Time][]archive.Row) {
	f.t.Helper()
	ctx := context.Background()
	for h, rows := range byHour {
		rows = slices.Clone(rows)
		slices.SortFunc(rows, func(a, b archive.Row) int { return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(a.Offset, b.Offset)) })
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[archive.Row](&buf, archive.Schema())
		if _, err := w.Write(rows); err != nil {
			f.t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			f.t.Fatal(err)
		}
		key := fmt.Sprintf("archive/views/dt=%s/hour=%02d/p%04d-o%012d-o%012d.parquet", h.Format(time.DateOnly), h.Hour(), p, first, last)
		if _, err := f.obj.Put(ctx, key, buf.Bytes()); err != nil {
			f.t.Fatal(err)
		}
	}
}

// progress writes the topic manifest (two partitions) and every partition's progress marker
// with the given watermark, as the archiver would.
func (f *fixture) progress(watermark time.Time) {
	f.t.Helper()
	m, _ := json.Marshal(archive.TopicManifest{Topic: "views", Partitions: 2, Updated: watermark})
	if _, err := f.obj.Put(context.Background(), "archive/views/_topic.json", m); err != nil {
		f.t.Fatal(err)
	}
	for p := range int32(2) {
		b, _ := json.Marshal(archive.Progress{Partition: p, NextOffset: f.next[p], Watermark: watermark, Updated: watermark})
		if _, err := f.obj.Put(context.Background(), fmt.Sprintf("archive/views/_progress/p%04d.json", p), b); err != nil {
			f.t.Fatal(err)
		}
	}
}

// generate writes the standard archive: two partitions over hours 10-13 of day0 and hour
// 00-01 of the next day, a retried roll (same offsets twice) and an overlapping repeated
// roll, then marks the archive complete through the next day.
func (f *fixture) generate() {
	f.t.Helper()
	base := day0.Add(10 * time.Hour)
	for p := range int32(2) {
		f.roll(p, 400, base, 2*time.Hour)                              // hours 10, 11
		again := f.roll(p, 300, base.Add(2*time.Hour), 90*time.Minute) // hours 12, 13
		// A retried upload of the same roll: the same rows under the same name would just
		// overwrite; a repeated roll after a crash covers the same offsets under a name with
		// a wider range. Dedup must count each offset once.
		first := f.next[p] - 300
		more := f.roll(p, 50, base.Add(3*time.Hour), 30*time.Minute) // hour 13, offsets continue
		merged := map[time.Time][]archive.Row{}
		for h, rs := range again {
			merged[h] = append(merged[h], rs...)
		}
		for h, rs := range more {
			merged[h] = append(merged[h], rs...)
		}
		f.write(p, first, f.next[p]-1, merged)
		f.roll(p, 200, day0.Add(24*time.Hour), 2*time.Hour) // next day 00, 01
	}
	f.progress(day0.Add(72 * time.Hour))
}

// regions are the events' regions: eu most, some without one, and a few of a fourth.
var regions = []string{"eu", "eu", "eu", "us", "us", "apac", "", "mars"}

// regionOf returns the exact views per item of one region's events in a set of hours.
func (f *fixture) regionOf(region string, hours ...time.Time) map[string]uint64 {
	out := map[string]uint64{}
	for _, h := range hours {
		for id, v := range f.regional[region][h] {
			out[id] += v
		}
	}
	return out
}

// truthTop returns the exact top of a set of hours, by views then item id.
func (f *fixture) truthOf(hours ...time.Time) map[string]uint64 {
	out := map[string]uint64{}
	for _, h := range hours {
		for id, v := range f.truth[h] {
			out[id] += v
		}
	}
	return out
}

func rank(c map[string]uint64) []model.Item {
	var out []model.Item
	for id, v := range c {
		out = append(out, model.Item{ItemID: id, Views: v, Exact: true})
	}
	slices.SortFunc(out, func(a, b model.Item) int {
		return cmp.Or(cmp.Compare(b.Views, a.Views), cmp.Compare(a.ItemID, b.ItemID))
	})
	for i := range out {
		out[i].Rank = i + 1
	}
	return out
}

func hoursOf(from time.Time, n int) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = from.Add(time.Duration(i) * time.Hour)
	}
	return out
}

// engines runs fn against every engine: ClickHouse (a freshly migrated database) and the
// Go-native one (a fresh bbolt file).
func engines(t *testing.T, fn func(t *testing.T, open func(t *testing.T) batch.Engine)) {
	t.Run("clickhouse", func(t *testing.T) {
		fn(t, func(t *testing.T) batch.Engine { e, _, _ := openCH(t); return e })
	})
	t.Run("native", func(t *testing.T) {
		fn(t, func(t *testing.T) batch.Engine {
			e, err := batch.OpenNative(filepath.Join(t.TempDir(), "rollups.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { e.Close() })
			return e
		})
	})
}

// openCH migrates a fresh database and returns the ClickHouse engine on it.
func openCH(t *testing.T) (*batch.ClickHouse, chstore.Options, func(q string) []string) {
	t.Helper()
	return openCHWith(t, 97, false) // several blocks per hour, so chunking is exercised
}

// openCHB is openCH for benchmarks: default chunks.
func openCHB(b *testing.B, rowByRow bool) (*batch.ClickHouse, chstore.Options, func(q string) []string) {
	b.Helper()
	return openCHWith(b, batch.DefaultClickHouseConfig().ChunkRows, rowByRow)
}

func openCHWith(t testing.TB, chunk int, rowByRow bool) (*batch.ClickHouse, chstore.Options, func(q string) []string) {
	t.Helper()
	addr := itest.ClickHouse(t)
	ctx := itest.Context(t, time.Minute)
	o := chstore.DefaultOptions()
	o.Addr, o.Database = addr, itest.Underscored(t, "trending_it_batch")
	conn, err := o.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+o.Database)
		conn.Close()
	})
	if _, err := chddl.Apply(ctx, conn, o.Database); err != nil {
		t.Fatal(err)
	}
	cfg := batch.DefaultClickHouseConfig()
	cfg.Database = o.Database
	cfg.ChunkRows, cfg.RowByRow = chunk, rowByRow
	e, err := batch.NewClickHouse(ctx, conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// dump returns a query's rows as text lines, to compare table contents.
	dump := func(q string) []string {
		rows, err := conn.Query(context.Background(), "SELECT toString(tuple(*)) FROM ("+q+")")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return out
	}
	return e, o, dump
}

func boltStore(t *testing.T) store.Store {
	t.Helper()
	s, err := boltstore.Open(filepath.Join(t.TempDir(), "serving.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// clock returns a fixed Now.
func clock(t time.Time) func() time.Time { return func() time.Time { return t } }
