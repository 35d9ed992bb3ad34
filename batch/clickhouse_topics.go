package batch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"trending/archive"
	"trending/model"
)

// topicsRaw is the raw staging layout of a topics build: the rows after the blocklist, with
// the account age already turned into is_new by the rules.
const topicsRaw = topicsRawColumns + rawEngine

const topicsRawColumns = ` (kafka_partition Int32, kafka_offset Int64, ts Int64, region String, item_id String,
	user_id String, is_new UInt8, count UInt32)`

// topicsCounted is the SQL of the counted mentions of a raw staging table: each (partition,
// offset) once; an anonymous row weighs its count; a (user, topic) counts once per slot,
// with the region and age of its earliest row by (ts, partition, offset). Columns h, rg,
// i, w (tenths) and nw (1 when from a new account).
func topicsCounted(raw string, slot time.Duration) string {
	ms := strconv.FormatInt(slot.Milliseconds(), 10)
	dedup := "SELECT kafka_partition AS p, kafka_offset AS o, item_id AS i, count AS c, ts AS t, region AS r," +
		" user_id AS u, is_new AS n FROM " + raw + " FINAL"
	return "SELECT toStartOfHour(toDateTime(intDiv(t, 1000), 'UTC')) AS h, r AS rg, i, toUInt64(if(n = 1, 3, 10) * greatest(c, 1)) AS w, n AS nw" +
		" FROM (" + dedup + ") WHERE u = ''" +
		" UNION ALL " +
		"SELECT toStartOfHour(toDateTime(intDiv(min(t), 1000), 'UTC')) AS h, argMin(r, (t, p, o)) AS rg, i," +
		" toUInt64(if(argMin(n, (t, p, o)) = 1, 3, 10)) AS w, argMin(n, (t, p, o)) AS nw" +
		" FROM (" + dedup + ") WHERE u != '' GROUP BY u, i, intDiv(t, " + ms + ")"
}

// BuildTopicHours implements TopicsEngine. Per UTC day of the hours: the rows are read from
// the archive in Go (which applies the blocklist and the account-age rule, so both engines
// share that code), loaded into a raw staging table with columnar inserts, deduplicated and
// counted in SQL (topicsCounted), and the day's partition of topics_hour is swapped in with
// REPLACE PARTITION.
func (e *ClickHouse) BuildTopicHours(ctx context.Context, src Archive, hours []Built, rules TopicRules) ([]Meta, error) {
	metas := make([]Meta, len(hours))
	byDay := map[time.Time][]int{}
	var days []time.Time
	for i, h := range hours {
		d := model.Day.Align(h.Start)
		if _, ok := byDay[d]; !ok {
			days = append(days, d)
		}
		byDay[d] = append(byDay[d], i)
	}
	for _, d := range days {
		var bs []Built
		for _, i := range byDay[d] {
			bs = append(bs, hours[i])
		}
		ms, err := e.buildTopicsDay(ctx, src, d, bs, rules)
		if err != nil {
			return nil, err
		}
		for j, i := range byDay[d] {
			metas[i] = ms[j]
		}
	}
	return metas, nil
}

func (e *ClickHouse) buildTopicsDay(ctx context.Context, src Archive, day time.Time, hours []Built, rules TopicRules) ([]Meta, error) {
	raw, stage := e.tmpName("topics_raw"), e.tmpName("topics_hour")
	defer e.dropOnShards(raw, stage)
	if err := e.onShards(ctx, func(ctx context.Context, s shard) error {
		if err := s.conn.Exec(ctx, "CREATE TABLE "+raw+topicsRaw); err != nil {
			return fmt.Errorf("create topics raw staging: %w", err)
		}
		if err := e.createStage(ctx, s, "topics_hour", stage); err != nil {
			return fmt.Errorf("create topics staging: %w (has `trending migrate` created topics_hour?)", err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	// On a cluster the rows go to their topic's shard (as in BuildHours): every row of a
	// (user, topic) is there, so each shard's dedupe and counts are exact for its topics.
	load, lctx := raw, ctx
	if e.cfg.Cluster != "" {
		load = e.tmpName("topics_rawdist")
		defer e.drop(load)
		if err := e.conn.Exec(ctx, "CREATE TABLE "+load+topicsRawColumns+" ENGINE = Distributed("+e.cfg.Cluster+", "+e.cfg.Database+", "+
			strings.TrimPrefix(raw, e.cfg.Database+".")+", cityHash64(item_id))"); err != nil {
			return nil, fmt.Errorf("create distributed topics raw staging: %w", err)
		}
		lctx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"insert_distributed_sync": 1}))
	}
	for _, h := range hours {
		if err := e.loadTopics(lctx, src, h.Start, load, rules); err != nil {
			return nil, err
		}
	}
	counted := topicsCounted(raw, rules.DedupeSlot)
	// Totals per hour, summed over the shards: rows counted, keys, weight.
	tot := map[int64][3]uint64{}
	var mu sync.Mutex
	if err := e.onShards(ctx, func(ctx context.Context, s shard) error {
		if err := s.conn.Exec(ctx, "INSERT INTO "+stage+" (hour, region, item_id, tenths, new_tenths)"+
			" SELECT h, rg, i, sum(w), sum(w * nw) FROM ("+counted+") GROUP BY h, rg, i"); err != nil {
			return fmt.Errorf("count topics of %s: %w", day.Format(time.DateOnly), err)
		}
		if err := s.conn.Exec(ctx, "INSERT INTO "+stage+" (hour, region, item_id, tenths, new_tenths) SELECT hour, region, item_id, tenths, new_tenths FROM "+
			e.local("topics_hour")+" WHERE toYYYYMMDD(hour) = "+ymd(day)+" AND hour NOT IN ("+dtList(hours)+")"); err != nil {
			return fmt.Errorf("copy untouched topics hours of %s: %w", day.Format(time.DateOnly), err)
		}
		rows, err := s.conn.Query(ctx, "SELECT toUInt32(h), count(), toUInt64(0), toUInt64(0) FROM ("+counted+") GROUP BY h"+
			" UNION ALL SELECT toUInt32(hour), 0, count(), sum(tenths) FROM "+stage+" WHERE hour IN ("+dtList(hours)+") GROUP BY hour")
		if err != nil {
			return fmt.Errorf("total topics hours of %s: %w", day.Format(time.DateOnly), err)
		}
		defer rows.Close()
		for rows.Next() {
			var h uint32
			var n, k, v uint64
			if err := rows.Scan(&h, &n, &k, &v); err != nil {
				return err
			}
			mu.Lock()
			c := tot[int64(h)]
			tot[int64(h)] = [3]uint64{c[0] + n, c[1] + k, c[2] + v}
			mu.Unlock()
		}
		if err := rows.Err(); err != nil {
			return err
		}
		if err := s.conn.Exec(ctx, "ALTER TABLE "+e.local("topics_hour")+" REPLACE PARTITION "+ymd(day)+" FROM "+stage); err != nil {
			return fmt.Errorf("swap in topics hours of %s: %w", day.Format(time.DateOnly), err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	version := time.Now().UnixMilli()
	b, err := e.conn.PrepareBatch(ctx, "INSERT INTO "+e.t("rollup_meta")+" (level, start, version, fingerprint, through, input_rows, items, views)")
	if err != nil {
		return nil, fmt.Errorf("record topics meta: %w", err)
	}
	metas := make([]Meta, len(hours))
	for i, h := range hours {
		t := tot[h.Start.Unix()]
		metas[i] = Meta{Fingerprint: h.Fingerprint, Version: version, Through: h.Through, InputRows: t[0], Items: t[1], Views: t[2]}
		if err := b.Append(TopicsRollup, h.Start, version, h.Fingerprint, h.Through, t[0], t[1], t[2]); err != nil {
			return nil, errors.Join(fmt.Errorf("record topics meta: %w", err), b.Abort())
		}
	}
	if err := b.Send(); err != nil {
		return nil, fmt.Errorf("record topics meta: %w", err)
	}
	return metas, nil
}

// loadTopics appends an hour's rows, after the blocklist, to a topics raw staging table,
// ChunkRows at a time, one column slice per column per INSERT.
func (e *ClickHouse) loadTopics(ctx context.Context, src Archive, hour time.Time, table string, rules TopicRules) error {
	var c archive.Columns
	var users []string
	var isNew []uint8
	flush := func() error {
		if c.Len() == 0 {
			return nil
		}
		b, err := e.conn.PrepareBatch(ctx, "INSERT INTO "+table+" (kafka_partition, kafka_offset, ts, region, item_id, user_id, is_new, count)")
		if err != nil {
			return fmt.Errorf("load topics hour %s: %w", hour.UTC().Format(time.RFC3339), err)
		}
		for i, col := range []any{c.Partition, c.Offset, c.TS, c.Region, c.ItemID, users, isNew, c.Count} {
			if err := b.Column(i).Append(col); err != nil {
				return errors.Join(fmt.Errorf("load topics hour %s: column %d: %w", hour.UTC().Format(time.RFC3339), i, err), b.Abort())
			}
		}
		if err := b.Send(); err != nil {
			return fmt.Errorf("load topics hour %s: %w", hour.UTC().Format(time.RFC3339), err)
		}
		c = archive.Columns{ItemID: c.ItemID[:0], Count: c.Count[:0], TS: c.TS[:0], Region: c.Region[:0], Partition: c.Partition[:0], Offset: c.Offset[:0]}
		users, isNew = users[:0], isNew[:0]
		return nil
	}
	err := src.ReadHour(ctx, hour, func(r archive.Row) error {
		if rules.Blocked != nil && rules.Blocked(r.ItemID) {
			return nil
		}
		c.ItemID = append(c.ItemID, r.ItemID)
		c.Count = append(c.Count, r.Count)
		c.TS = append(c.TS, r.TS)
		c.Region = append(c.Region, r.Region)
		c.Partition = append(c.Partition, r.Partition)
		c.Offset = append(c.Offset, r.Offset)
		users = append(users, r.UserID)
		var n uint8
		if rules.isNew(r.AccountAgeDays) {
			n = 1
		}
		isNew = append(isNew, n)
		if c.Len() >= e.cfg.ChunkRows {
			return flush()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("read hour %s: %w", hour.UTC().Format(time.RFC3339), err)
	}
	return flush()
}

// TopicsMeta implements TopicsEngine.
func (e *ClickHouse) TopicsMeta(ctx context.Context, hour time.Time) (Meta, error) {
	return e.Meta(ctx, TopicsRollup, hour)
}

// TopicCounts implements TopicsEngine.
func (e *ClickHouse) TopicCounts(ctx context.Context, hour time.Time) ([]TopicCount, error) {
	rows, err := e.conn.Query(ctx, "SELECT region, item_id, tenths, new_tenths FROM "+e.t("topics_hour")+" WHERE hour = "+dt(hour)+" ORDER BY region, item_id")
	if err != nil {
		return nil, fmt.Errorf("topics hour %s: %w", hour.UTC().Format(time.RFC3339), err)
	}
	defer rows.Close()
	var out []TopicCount
	for rows.Next() {
		var c TopicCount
		if err := rows.Scan(&c.Region, &c.Topic, &c.Tenths, &c.NewTenths); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

var (
	_ TopicsEngine = (*ClickHouse)(nil)
	_ TopicsEngine = (*Native)(nil)
)
