package batch_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"trending/archive"
	"trending/batch"
	"trending/model/topicrules"
)

// topicRows generates n mentions of one hour: 2,000 topics, 20,000 users (70% of rows carry
// a user, a third of those from new accounts), four regions.
func topicRows(n int, hour time.Time) []archive.Row {
	rows := make([]archive.Row, n)
	for i := range rows {
		r := archive.Row{ItemID: fmt.Sprintf("t%d", (i*7919)%2000), Count: 1, TS: hour.Add(time.Duration(i) * time.Hour / time.Duration(n)).UnixMilli(),
			Partition: int32(i % 8), Offset: int64(i), Region: []string{"eu", "us", "jp", ""}[i%4]}
		if i%10 < 7 {
			r.UserID = fmt.Sprintf("u%d", (i*31)%20000)
			age := int32(i % 90)
			r.AccountAgeDays = &age
		}
		rows[i] = r
	}
	return rows
}

// BenchmarkTopicsBuildHour builds one topics hour rollup of 100,000 mentions on each
// engine, from memory (the archive read is not measured):
//
//	go test ./batch -run XXX -bench TopicsBuildHour -benchtime 3x
func BenchmarkTopicsBuildHour(b *testing.B) {
	const n = 100_000
	h := day0.Add(10 * time.Hour)
	src := memArchive{topicRows(n, h)}
	rules := batch.TopicRules{Blocked: topicrules.NewBlocklist("spam").Blocked, NewAccountAge: 30 * 24 * time.Hour, DedupeSlot: 15 * time.Minute}
	engines := map[string]func(b *testing.B) batch.TopicsEngine{
		"native": func(b *testing.B) batch.TopicsEngine {
			e, err := batch.OpenNative(filepath.Join(b.TempDir(), "rollups.db"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { e.Close() })
			return e
		},
		"clickhouse": func(b *testing.B) batch.TopicsEngine { e, _, _ := openCHB(b, false); return e },
	}
	for _, name := range []string{"native", "clickhouse"} {
		b.Run(name, func(b *testing.B) {
			e := engines[name](b)
			ctx := context.Background()
			var keys uint64
			b.ReportAllocs()
			for b.Loop() {
				ms, err := e.BuildTopicHours(ctx, src, []batch.Built{{Start: h, Fingerprint: "x", Through: h.Add(time.Hour)}}, rules)
				if err != nil {
					b.Fatal(err)
				}
				keys = ms[0].Items
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(keys), "keys")
		})
	}
}
