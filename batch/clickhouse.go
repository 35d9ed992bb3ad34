package batch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"trending/archive"
	"trending/internal/setting"
	"trending/model"
	"trending/model/topk"
	"trending/model/windowset"
)

// ClickHouseConfig configures the ClickHouse engine.
type ClickHouseConfig struct {
	// Database holds the rollup tables (schemas/clickhouse/002_batch.sql, `trending
	// migrate`); default "trending".
	Database string
	// ChunkRows is how many archive rows one block of an hour's INSERT carries; default
	// 262,144 (a few MB of columns), which bounds the loader's memory however large an hour is.
	ChunkRows int
	// RowByRow appends raw rows one at a time instead of a column slice at a time: only the
	// load benchmark sets it, to measure what the columnar path saves.
	RowByRow bool
	// Cluster is the cluster (remote_servers) the database was migrated on, `trending
	// migrate --cluster NAME`; empty (the default): one server. On a cluster the engine
	// writes each shard's rows to its rollup_x_local tables and replaces partitions there,
	// shard by shard, and reads through the Distributed rollup_x tables (docs/scale-out.md).
	Cluster string
	// Dial opens a connection to one shard's server, host:port as system.clusters names it,
	// with the credentials and TLS of the engine's own connection. Required with Cluster.
	Dial func(ctx context.Context, addr string) (driver.Conn, error)
}

// DefaultClickHouseConfig returns the defaults.
func DefaultClickHouseConfig() ClickHouseConfig {
	return ClickHouseConfig{Database: "trending", ChunkRows: 256 << 10}
}

// Validate reports a configuration that cannot work, by field (setting.ErrConfig).
func (c ClickHouseConfig) Validate() error {
	var errs []error
	if !sqlIdent(c.Database) {
		errs = append(errs, setting.Invalid("Database", "clickhouse database %q: use letters, digits and underscores (default %s)", c.Database, DefaultClickHouseConfig().Database))
	}
	if c.ChunkRows < 1 {
		errs = append(errs, setting.Invalid("ChunkRows", "%d: must be positive (default %d)", c.ChunkRows, DefaultClickHouseConfig().ChunkRows))
	}
	if c.Cluster != "" && !sqlIdent(c.Cluster) {
		errs = append(errs, setting.Invalid("Cluster", "clickhouse cluster %q: use the name from remote_servers: letters, digits and underscores", c.Cluster))
	}
	if c.Cluster != "" && c.Dial == nil {
		errs = append(errs, setting.Invalid("Dial", "a cluster's shards need a way to connect"))
	}
	return errors.Join(errs...)
}

func sqlIdent(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// ClickHouse is the production engine. A build loads raw rows into a staging table of its
// own with columnar batch inserts (columns listed, as 18.16 requires), deduplicates them by
// (kafka_partition, kafka_offset) in SQL (the archive reader already does; this is the
// second guard: a ReplacingMergeTree read with FINAL, in memory that does not grow with the
// events), aggregates into a staging copy of the rollup partition,
// copies the partition's untouched windows across, and swaps the partition in with ALTER
// TABLE ... REPLACE PARTITION: readers see the old partition or the new one.
//
// On a cluster (ClickHouseConfig.Cluster) the raw rows are inserted through a Distributed
// table sharded like the rollups (cityHash64(item_id)), so every shard receives the events
// of its own items; each shard then aggregates, copies and swaps its partitions of the
// rollup_x_local tables on its own server, where the day and month builds also read (an
// item's hours are all on its shard). Reads (TopK, Counts, Meta's check) go through the
// Distributed rollup_x tables; rollup_meta is replicated on every node.
type ClickHouse struct {
	conn   driver.Conn
	cfg    ClickHouseConfig
	seq    atomic.Int64
	shards []shard  // the one server (conn) or, on a cluster, one replica of each shard
	keys   sync.Map // shard addr + "/" + table -> [2]string: a local table's partition and sorting keys
}

// shard is where the engine builds rollups: a server holding one shard's local tables.
type shard struct {
	addr string // host:port; empty for the one server
	conn driver.Conn
}

// NewClickHouse returns an engine on conn; the rollup tables must exist (`trending migrate`).
func NewClickHouse(ctx context.Context, conn driver.Conn, cfg ClickHouseConfig) (*ClickHouse, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name IN ('rollup_hour', 'rollup_day', 'rollup_month', 'rollup_meta')", cfg.Database).Scan(&n); err != nil {
		return nil, fmt.Errorf("look for rollup tables in %s: %w", cfg.Database, err)
	}
	if n != 4 {
		return nil, fmt.Errorf("clickhouse database %s lacks the rollup tables: run `trending migrate`", cfg.Database)
	}
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table IN ('rollup_hour', 'rollup_day', 'rollup_month') AND name = 'grp'", cfg.Database).Scan(&n); err != nil {
		return nil, fmt.Errorf("look for the rollups' group column in %s: %w", cfg.Database, err)
	}
	if n != 3 {
		return nil, fmt.Errorf("clickhouse database %s's rollup tables lack the group column (schemas/clickhouse/005): run `trending migrate`", cfg.Database)
	}
	e := &ClickHouse{conn: conn, cfg: cfg}
	if cfg.Cluster == "" {
		e.shards = []shard{{conn: conn}}
		return e, nil
	}
	if err := e.openShards(ctx); err != nil {
		return nil, errors.Join(err, e.Close())
	}
	return e, nil
}

// openShards connects to the first replica of every shard of the cluster and checks each
// holds the local rollup tables: a replaced partition replicates to the shard's other
// replicas by itself.
func (e *ClickHouse) openShards(ctx context.Context) error {
	rows, err := e.conn.Query(ctx, "SELECT shard_num, host_name, port FROM system.clusters WHERE cluster = ? AND replica_num = 1 ORDER BY shard_num", e.cfg.Cluster)
	if err != nil {
		return fmt.Errorf("read cluster %s: %w", e.cfg.Cluster, err)
	}
	var addrs []string
	for rows.Next() {
		var num uint32
		var host string
		var port uint16
		if err := rows.Scan(&num, &host, &port); err != nil {
			rows.Close()
			return fmt.Errorf("read cluster %s: %w", e.cfg.Cluster, err)
		}
		addrs = append(addrs, net.JoinHostPort(host, strconv.Itoa(int(port))))
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read cluster %s: %w", e.cfg.Cluster, err)
	}
	if len(addrs) == 0 {
		return fmt.Errorf("clickhouse has no cluster %q in its remote_servers: name the cluster the database was migrated on (`trending migrate --cluster`)", e.cfg.Cluster)
	}
	for _, a := range addrs {
		c, err := e.cfg.Dial(ctx, a)
		if err != nil {
			return fmt.Errorf("shard %s of cluster %s: %w", a, e.cfg.Cluster, err)
		}
		e.shards = append(e.shards, shard{addr: a, conn: c})
		var n uint64
		if err := c.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name IN ('rollup_hour_local', 'rollup_day_local', 'rollup_month_local')", e.cfg.Database).Scan(&n); err != nil {
			return fmt.Errorf("look for rollup tables on shard %s: %w", a, err)
		}
		if n != 3 {
			return fmt.Errorf("shard %s lacks %s's local rollup tables: run `trending migrate --cluster %s`", a, e.cfg.Database, e.cfg.Cluster)
		}
	}
	return nil
}

func (e *ClickHouse) t(name string) string { return e.cfg.Database + "." + name }

// local names the table a shard writes: name itself on one server, name_local on a cluster.
func (e *ClickHouse) local(name string) string {
	if e.cfg.Cluster != "" {
		return e.t(name + "_local")
	}
	return e.t(name)
}

// onShards runs fn on every shard at once and joins their errors.
func (e *ClickHouse) onShards(ctx context.Context, fn func(ctx context.Context, s shard) error) error {
	if len(e.shards) == 1 {
		return fn(ctx, e.shards[0])
	}
	errs := make([]error, len(e.shards))
	var wg sync.WaitGroup
	for i, s := range e.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx, s); err != nil {
				errs[i] = fmt.Errorf("shard %s: %w", s.addr, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// createStage creates a staging table shaped like a rollup table's written table (e.local)
// on one shard. On a cluster that table is replicated and its engine would register the
// stage in ZooKeeper beside it: the stage takes a plain MergeTree with the same partition
// and sorting keys instead, which REPLACE PARTITION accepts.
func (e *ClickHouse) createStage(ctx context.Context, s shard, table, stage string) error {
	if e.cfg.Cluster == "" {
		return s.conn.Exec(ctx, "CREATE TABLE "+stage+" AS "+e.t(table))
	}
	keys, err := e.localKeys(ctx, s, table)
	if err != nil {
		return err
	}
	return s.conn.Exec(ctx, "CREATE TABLE "+stage+" AS "+e.local(table)+" ENGINE = MergeTree() PARTITION BY "+keys[0]+" ORDER BY ("+keys[1]+")")
}

// localKeys returns the partition and sorting keys of table's local table on shard s, read
// once from system.tables. ClickHouse 18.16 reads every table of the database to answer
// that query, and fails it with UNKNOWN_TABLE (60) when another build drops its staging
// table meanwhile: that is retried, a few times, since the table asked for does exist.
func (e *ClickHouse) localKeys(ctx context.Context, s shard, table string) ([2]string, error) {
	id := s.addr + "/" + table
	if k, ok := e.keys.Load(id); ok {
		return k.([2]string), nil
	}
	var k [2]string
	var err error
	for try := 0; try < 5; try++ {
		err = s.conn.QueryRow(ctx, "SELECT partition_key, sorting_key FROM system.tables WHERE database = ? AND name = ?", e.cfg.Database, table+"_local").Scan(&k[0], &k[1])
		var ex *clickhouse.Exception
		if err == nil || !errors.As(err, &ex) || ex.Code != 60 || ctx.Err() != nil {
			break
		}
		time.Sleep(time.Duration(try+1) * 20 * time.Millisecond)
	}
	if err != nil {
		return k, fmt.Errorf("keys of %s: %w", e.local(table), err)
	}
	e.keys.Store(id, k)
	return k, nil
}

// tmpName returns a staging table name unique to this process and call.
func (e *ClickHouse) tmpName(kind string) string {
	return fmt.Sprintf("%s.tmp_%s_%d_%d", e.cfg.Database, kind, time.Now().UnixNano(), e.seq.Add(1))
}

func (e *ClickHouse) drop(tables ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, t := range tables {
		_ = e.conn.Exec(ctx, "DROP TABLE IF EXISTS "+t)
	}
}

// dropOnShards drops staging tables on every shard (on one server: drop).
func (e *ClickHouse) dropOnShards(tables ...string) {
	if e.cfg.Cluster == "" {
		e.drop(tables...)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = e.onShards(ctx, func(ctx context.Context, s shard) error {
		for _, t := range tables {
			_ = s.conn.Exec(ctx, "DROP TABLE IF EXISTS "+t)
		}
		return nil
	})
}

// rawColumns are a build's staging table of raw events. region is the event's region when
// the build keeps that value's rows (Built.Groups), else "".
// user_id is the event's account when the build caps (Built.Cap), else "".
const rawColumns = `(kafka_partition Int32, kafka_offset Int64, item_id String, count UInt32, ts Int64, region String, user_id String)`

// rawEngine is the engine of every raw staging table: rows of one (kafka_partition,
// kafka_offset) are the same event, and reading the table with FINAL keeps one of them.
// FINAL merges the sorted parts as a stream, so the guard's memory does not grow with the
// hour's events; a GROUP BY kafka_partition, kafka_offset held a hash entry an event and
// passed ClickHouse's per-query limit at 100M events (issue 33's soak).
const rawEngine = ` ENGINE = ReplacingMergeTree() ORDER BY (kafka_partition, kafka_offset)`

func dt(t time.Time) string { return "toDateTime(" + strconv.FormatInt(t.Unix(), 10) + ")" }

func dtList(bs []Built) string {
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = dt(b.Start)
	}
	return strings.Join(parts, ", ")
}

func ymd(t time.Time) string { return t.UTC().Format("20060102") }

// BuildHours implements Engine.
func (e *ClickHouse) BuildHours(ctx context.Context, src Archive, day time.Time, hours []Built) ([]Meta, error) {
	day = model.Day.Align(day)
	for _, h := range hours {
		if !model.Day.Align(h.Start).Equal(day) {
			panic("BUG: BuildHours of hour " + h.Start.String() + " outside day " + day.String())
		}
	}
	raw, stage := e.tmpName("raw"), e.tmpName("hour")
	defer e.dropOnShards(raw, stage)
	if err := e.onShards(ctx, func(ctx context.Context, s shard) error {
		if err := s.conn.Exec(ctx, "CREATE TABLE "+raw+" "+rawColumns+rawEngine); err != nil {
			return fmt.Errorf("create raw staging: %w", err)
		}
		if err := e.createStage(ctx, s, "rollup_hour", stage); err != nil {
			return fmt.Errorf("create hour staging: %w", err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	load, lctx := raw, ctx
	if e.cfg.Cluster != "" {
		// Insert through a Distributed table over the shards' raw tables, sharded like the
		// rollups, synchronously: the rows are on their shards when the INSERT returns.
		load = e.tmpName("rawdist")
		defer e.drop(load)
		if err := e.conn.Exec(ctx, "CREATE TABLE "+load+" "+rawColumns+" ENGINE = Distributed("+e.cfg.Cluster+", "+e.cfg.Database+", "+
			strings.TrimPrefix(raw, e.cfg.Database+".")+", cityHash64(item_id))"); err != nil {
			return nil, fmt.Errorf("create distributed raw staging: %w", err)
		}
		lctx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{"insert_distributed_sync": 1}))
	}
	for _, h := range hours {
		if _, err := e.load(lctx, src, h.Start, load, h.Groups, h.Cap > 0); err != nil {
			return nil, err
		}
	}
	// Input rows after dedup, per hour, summed over the shards (an event is on its item's).
	inputs := map[int64]uint64{}
	var mu sync.Mutex
	if err := e.onShards(ctx, func(ctx context.Context, s shard) error {
		// Each event counts for every item (grp "") and, when it has a kept region, for that
		// region's rows too.
		q := "INSERT INTO " + stage + ` (hour, grp, item_id, views)
		SELECT toStartOfHour(toDateTime(intDiv(t, 1000), 'UTC')) AS h, arrayJoin(if(r = '', [''], ['', r])) AS g, i, sum(c)
		FROM (SELECT item_id AS i, count AS c, ts AS t, region AS r FROM ` + raw + ` FINAL)
		GROUP BY h, g, i`
		if n := hours[0].Cap; n > 0 {
			// Per-account caps: each (hour, group, item, account) adds at most n views; an
			// event without an account is not capped.
			capN := "toUInt64(" + strconv.FormatUint(uint64(n), 10) + ")"
			q = "INSERT INTO " + stage + ` (hour, grp, item_id, views)
		SELECT h, g, i, sum(v) FROM (
			SELECT h, g, i, u, if(u = '', sum(c), least(sum(c), ` + capN + `)) AS v FROM (
				SELECT toStartOfHour(toDateTime(intDiv(t, 1000), 'UTC')) AS h, arrayJoin(if(r = '', [''], ['', r])) AS g, i, u, toUInt64(c) AS c
				FROM (SELECT item_id AS i, count AS c, ts AS t, region AS r, user_id AS u FROM ` + raw + ` FINAL))
			GROUP BY h, g, i, u)
		GROUP BY h, g, i`
		}
		if err := s.conn.Exec(ctx, q); err != nil {
			return fmt.Errorf("aggregate hours of %s: %w", day.Format(time.DateOnly), err)
		}
		if err := s.conn.Exec(ctx, "INSERT INTO "+stage+" (hour, grp, item_id, views) SELECT hour, grp, item_id, views FROM "+e.local("rollup_hour")+
			" WHERE toYYYYMMDD(hour) = "+ymd(day)+" AND hour NOT IN ("+dtList(hours)+")"); err != nil {
			return fmt.Errorf("copy untouched hours of %s: %w", day.Format(time.DateOnly), err)
		}
		if err := s.conn.Exec(ctx, "ALTER TABLE "+e.local("rollup_hour")+" REPLACE PARTITION "+ymd(day)+" FROM "+stage); err != nil {
			return fmt.Errorf("swap in hours of %s: %w", day.Format(time.DateOnly), err)
		}
		rows, err := s.conn.Query(ctx, "SELECT toUInt32(toStartOfHour(toDateTime(intDiv(t, 1000), 'UTC'))) AS h, count() FROM (SELECT ts AS t FROM "+raw+" FINAL) GROUP BY h")
		if err != nil {
			return fmt.Errorf("count inputs: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var h uint32
			var n uint64
			if err := rows.Scan(&h, &n); err != nil {
				return err
			}
			mu.Lock()
			inputs[int64(h)] += n
			mu.Unlock()
		}
		return rows.Err()
	}); err != nil {
		return nil, err
	}
	metas := make([]Meta, len(hours))
	for i, h := range hours {
		metas[i] = Meta{Fingerprint: h.Fingerprint, Through: h.Through, InputRows: inputs[h.Start.Unix()]}
	}
	if err := e.recordMeta(ctx, Hour, hours, metas); err != nil {
		return nil, err
	}
	return metas, nil
}

// recordMeta fills each meta's item and view totals from the rollup table and appends one
// rollup_meta row per window.
func (e *ClickHouse) recordMeta(ctx context.Context, level string, bs []Built, metas []Meta) error {
	l := levelOf(level)
	table, col := l.table, l.column
	// The totals of what each shard swapped in, summed: its items are its own, so the rows
	// add up to the window's items (read from the tables written, not through a Distributed
	// table, which may ask a replica the swap has not reached yet).
	tot := map[int64][2]uint64{}
	var mu sync.Mutex
	if err := e.onShards(ctx, func(ctx context.Context, sh shard) error {
		rows, err := sh.conn.Query(ctx, "SELECT toUInt32("+col+"), count(), sum(views) FROM "+e.local(table)+" WHERE "+col+" IN ("+dateList(level, bs)+") AND grp = '' GROUP BY "+col)
		if err != nil {
			return fmt.Errorf("total %s rollups: %w", level, err)
		}
		defer rows.Close()
		for rows.Next() {
			var s uint32
			var n, v uint64
			if err := rows.Scan(&s, &n, &v); err != nil {
				return err
			}
			s64 := int64(s) * l.keySeconds() // a Date column: toUInt32 is the day number, not seconds
			mu.Lock()
			t := tot[s64]
			tot[s64] = [2]uint64{t[0] + n, t[1] + v}
			mu.Unlock()
		}
		return rows.Err()
	}); err != nil {
		return err
	}
	version := time.Now().UnixMilli()
	b, err := e.conn.PrepareBatch(ctx, "INSERT INTO "+e.t("rollup_meta")+" (level, start, version, fingerprint, through, input_rows, items, views)")
	if err != nil {
		return fmt.Errorf("record %s meta: %w", level, err)
	}
	for i, bl := range bs {
		tv := tot[bl.Start.Unix()]
		metas[i].Items, metas[i].Views, metas[i].Version = tv[0], tv[1], version
		if metas[i].InputRows == 0 && !l.fromArchive() {
			metas[i].InputRows = tv[0]
		}
		if err := b.Append(level, bl.Start, version, bl.Fingerprint, bl.Through, metas[i].InputRows, tv[0], tv[1]); err != nil {
			return errors.Join(fmt.Errorf("record %s meta: %w", level, err), b.Abort())
		}
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("record %s meta: %w", level, err)
	}
	return nil
}

// dateList renders window starts as SQL literals of the level's column type.
func dateList(level string, bs []Built) string {
	l := levelOf(level)
	parts := make([]string, len(bs))
	for i, b := range bs {
		parts[i] = l.key(b.Start)
	}
	return strings.Join(parts, ", ")
}

// Load appends the deduplicated events of one archive hour to table (the raw staging
// layout), each event's region kept where groups accepts it, as one INSERT: ChunkRows at a
// time become one block, one column slice per column, sent as soon as it is full while the
// INSERT stays open. The server writes each block while the next one is read from the
// archive and built, as it does for clickhouse-client's blocks; an INSERT per chunk left the
// server idle while the client built the next, and the client idle while the server wrote
// (BENCHMARKS.md, "Batch layer"). An hour without events sends nothing. It returns the rows
// sent. On an error, blocks already sent stay in table: staging tables are dropped with
// their build.
func (e *ClickHouse) Load(ctx context.Context, src Archive, hour time.Time, table string, groups windowset.Groups) (int, error) {
	return e.load(ctx, src, hour, table, groups, false)
}

// load is Load, with each event's account in user_id when users (a capped build), else "".
func (e *ClickHouse) load(ctx context.Context, src Archive, hour time.Time, table string, groups windowset.Groups, users bool) (int, error) {
	var c archive.Columns
	var user []string
	var b driver.Batch
	total := 0
	flush := func() error {
		if c.Len() == 0 {
			return nil
		}
		if b == nil {
			var err error
			if b, err = e.conn.PrepareBatch(ctx, "INSERT INTO "+table+" (kafka_partition, kafka_offset, item_id, count, ts, region, user_id)"); err != nil {
				return err
			}
		}
		if err := e.appendChunk(b, &c, user); err != nil {
			return err
		}
		if err := b.Flush(); err != nil {
			return err
		}
		total += c.Len()
		c = archive.Columns{ItemID: c.ItemID[:0], Count: c.Count[:0], TS: c.TS[:0], Partition: c.Partition[:0], Offset: c.Offset[:0], Region: c.Region[:0]}
		user = user[:0]
		return nil
	}
	err := src.ReadHour(ctx, hour, func(r archive.Row) error {
		c.ItemID = append(c.ItemID, r.ItemID)
		c.Count = append(c.Count, r.Count)
		c.TS = append(c.TS, r.TS)
		c.Partition = append(c.Partition, r.Partition)
		c.Offset = append(c.Offset, r.Offset)
		region := ""
		if groups.On() && groups.Accepts(r.Region) {
			region = r.Region
		}
		c.Region = append(c.Region, region)
		u := ""
		if users {
			u = r.UserID
		}
		user = append(user, u)
		if c.Len() >= e.cfg.ChunkRows {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		if b != nil {
			b.Abort() // closes the connection mid-INSERT rather than returning it to the pool
		}
		return total, fmt.Errorf("load hour %s: %w", hour.UTC().Format(time.RFC3339), err)
	}
	if b != nil {
		if err := b.Send(); err != nil {
			return total, fmt.Errorf("load hour %s: %w", hour.UTC().Format(time.RFC3339), err)
		}
	}
	return total, nil
}

// appendChunk adds the raw staging columns of c to b's block.
func (e *ClickHouse) appendChunk(b driver.Batch, c *archive.Columns, user []string) error {
	if e.cfg.RowByRow {
		for i := range c.Len() {
			if err := b.Append(c.Partition[i], c.Offset[i], c.ItemID[i], c.Count[i], c.TS[i], c.Region[i], user[i]); err != nil {
				return err
			}
		}
		return nil
	}
	for i, col := range []any{c.Partition, c.Offset, c.ItemID, c.Count, c.TS, c.Region, user} {
		if err := b.Column(i).Append(col); err != nil {
			return fmt.Errorf("column %d: %w", i, err)
		}
	}
	return nil
}

// CreateRawTable creates a raw staging table for Load (benchmarks use it directly).
func (e *ClickHouse) CreateRawTable(ctx context.Context) (string, error) {
	raw := e.tmpName("raw")
	return raw, e.conn.Exec(ctx, "CREATE TABLE "+raw+" "+rawColumns+rawEngine)
}

// DropTable drops a staging table.
func (e *ClickHouse) DropTable(table string) { e.drop(table) }

// BuildDays implements Engine.
func (e *ClickHouse) BuildDays(ctx context.Context, month time.Time, days []Built) error {
	month = model.Month.Align(month)
	stage := e.tmpName("day")
	defer e.dropOnShards(stage)
	var parts []string
	for _, d := range days {
		if !model.Month.Align(d.Start).Equal(month) {
			panic("BUG: BuildDays of a day outside month")
		}
		parts = append(parts, ymd(d.Start))
	}
	return e.finish(ctx, Day, stage, month.Format("200601"), "toYYYYMM(day) = "+month.Format("200601"), days,
		func(ctx context.Context, s shard) error {
			if err := s.conn.Exec(ctx, "INSERT INTO "+stage+" (day, grp, item_id, views) SELECT toDate(hour) AS d, grp, item_id, sum(views) FROM "+e.local("rollup_hour")+
				" WHERE toYYYYMMDD(hour) IN ("+strings.Join(parts, ", ")+") GROUP BY d, grp, item_id"); err != nil {
				return fmt.Errorf("sum hours into days of %s: %w", month.Format("2006-01"), err)
			}
			return nil
		})
}

// BuildMonths implements Engine.
func (e *ClickHouse) BuildMonths(ctx context.Context, year time.Time, months []Built) error {
	stage := e.tmpName("month")
	defer e.dropOnShards(stage)
	y := year.UTC().Year()
	for _, m := range months {
		if m.Start.UTC().Year() != y {
			panic("BUG: BuildMonths of a month outside year")
		}
	}
	return e.finish(ctx, Month, stage, strconv.Itoa(y), "toYear(month) = "+strconv.Itoa(y), months,
		func(ctx context.Context, s shard) error {
			for _, m := range months {
				if err := s.conn.Exec(ctx, "INSERT INTO "+stage+" (month, grp, item_id, views) SELECT toDate('"+m.Start.UTC().Format(time.DateOnly)+"'), grp, item_id, sum(views) FROM "+e.local("rollup_day")+
					" WHERE toYYYYMM(day) = "+m.Start.UTC().Format("200601")+" AND day < toDate('"+m.Through.UTC().Format(time.DateOnly)+"') GROUP BY grp, item_id"); err != nil {
					return fmt.Errorf("sum days into month %s: %w", m.Start.Format("2006-01"), err)
				}
			}
			return nil
		})
}

// finish builds one partition of a day or month rollup on every shard: it creates stage,
// fills it (fill, from the shard's own finer rollup), copies the partition's untouched
// windows into it and swaps the partition in; then it records the meta rows.
func (e *ClickHouse) finish(ctx context.Context, level, stage, partition, inPartition string, bs []Built, fill func(context.Context, shard) error) error {
	table, col := levelOf(level).table, levelOf(level).column
	if err := e.onShards(ctx, func(ctx context.Context, s shard) error {
		if err := e.createStage(ctx, s, table, stage); err != nil {
			return fmt.Errorf("create %s staging: %w", level, err)
		}
		if err := fill(ctx, s); err != nil {
			return err
		}
		if err := s.conn.Exec(ctx, "INSERT INTO "+stage+" ("+col+", grp, item_id, views) SELECT "+col+", grp, item_id, views FROM "+e.local(table)+
			" WHERE "+inPartition+" AND "+col+" NOT IN ("+dateList(level, bs)+")"); err != nil {
			return fmt.Errorf("copy untouched %s rollups: %w", level, err)
		}
		if err := s.conn.Exec(ctx, "ALTER TABLE "+e.local(table)+" REPLACE PARTITION "+partition+" FROM "+stage); err != nil {
			return fmt.Errorf("swap in %s rollups %s: %w", level, partition, err)
		}
		return nil
	}); err != nil {
		return err
	}
	return e.recordMeta(ctx, level, bs, make([]Meta, len(bs)))
}

// Meta implements Engine.
func (e *ClickHouse) Meta(ctx context.Context, level string, start time.Time) (Meta, error) {
	var m Meta
	var found uint64
	err := e.conn.QueryRow(ctx, "SELECT count(), argMax(fingerprint, version), max(version), argMax(through, version), argMax(input_rows, version), argMax(items, version), argMax(views, version) FROM "+
		e.t("rollup_meta")+" WHERE level = ? AND start = "+dt(start), level).Scan(&found, &m.Fingerprint, &m.Version, &m.Through, &m.InputRows, &m.Items, &m.Views)
	if err != nil {
		return m, fmt.Errorf("read %s meta %s: %w", level, start.UTC().Format(time.RFC3339), err)
	}
	if found == 0 {
		return Meta{}, fmt.Errorf("%s %s: %w", level, start.UTC().Format(time.RFC3339), ErrNoRollup)
	}
	m.Through = m.Through.UTC()
	if l, ok := lookupLevel(level); ok && l.own {
		// Trust the meta only while the rollup still holds what it recorded: ClickHouse 18.16
		// brings back the parts a REPLACE PARTITION replaced when it is killed within
		// minutes of the swap, which would count the window twice (DESIGN.md, "Known
		// faults"). A mismatch rebuilds the window, whose swap replaces them again.
		table, where := e.rollupWhere(level, start)
		var rows, views uint64
		if err := e.conn.QueryRow(ctx, "SELECT count(), sum(views) FROM "+table+" WHERE "+where+" AND grp = ''").Scan(&rows, &views); err != nil {
			return m, fmt.Errorf("check %s rollup %s: %w", level, start.UTC().Format(time.RFC3339), err)
		}
		if rows != m.Items || views != m.Views {
			return Meta{}, fmt.Errorf("%s %s: the rollup holds %d rows and %d views, its meta says %d and %d: %w",
				level, start.UTC().Format(time.RFC3339), rows, views, m.Items, m.Views, ErrNoRollup)
		}
	}
	return m, nil
}

// rollupWhere returns the table and filter of one window's rows: its own rollup's, or for a
// level without one the rollups it sums (a week: a range on the day key; all time: every month).
func (e *ClickHouse) rollupWhere(level string, start time.Time) (table, where string) {
	l := levelOf(level)
	r := levelOf(l.sums)
	switch {
	case l.own:
		return e.t(l.table), l.column + " = " + l.key(start)
	case l.period != "":
		return e.t(r.table), r.column + " >= " + r.key(start) + " AND " + r.column + " < " + r.key(l.period.Next(start))
	}
	return e.t(r.table), "1"
}

// TopK implements Engine.
func (e *ClickHouse) TopK(ctx context.Context, level string, start time.Time, group string, k int) ([]topk.Entry, uint64, uint64, error) {
	table, where := e.rollupWhere(level, start)
	rows, err := e.conn.Query(ctx, "SELECT item_id, sum(views) AS v FROM "+table+" WHERE "+where+" AND grp = ?"+
		" GROUP BY item_id ORDER BY v DESC, item_id ASC LIMIT "+strconv.Itoa(k), group)
	if err != nil {
		return nil, 0, 0, fmt.Errorf("top %d of %s: %w", k, level, err)
	}
	var top []topk.Entry
	for rows.Next() {
		var r topk.Entry
		if err := rows.Scan(&r.Item, &r.Count); err != nil {
			rows.Close()
			return nil, 0, 0, err
		}
		top = append(top, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, 0, 0, err
	}
	var views, items uint64
	if err := e.conn.QueryRow(ctx, "SELECT sum(views), uniqExact(item_id) FROM "+table+" WHERE "+where+" AND grp = ?", group).Scan(&views, &items); err != nil {
		return nil, 0, 0, fmt.Errorf("totals of %s: %w", level, err)
	}
	return top, views, items, nil
}

// Counts implements Engine.
func (e *ClickHouse) Counts(ctx context.Context, level string, start time.Time, group string, items []string) (map[string]uint64, error) {
	out := make(map[string]uint64, len(items))
	if len(items) == 0 {
		return out, nil
	}
	table, where := e.rollupWhere(level, start)
	// One placeholder per item: 18.16 does not take an array on the right of IN.
	args := make([]any, 0, len(items)+1)
	args = append(args, group)
	for _, id := range items {
		args = append(args, id)
	}
	marks := strings.Repeat("?, ", len(items))
	rows, err := e.conn.Query(ctx, "SELECT item_id, sum(views) FROM "+table+" WHERE "+where+" AND grp = ? AND item_id IN ("+marks[:len(marks)-2]+") GROUP BY item_id", args...)
	if err != nil {
		return nil, fmt.Errorf("counts in %s: %w", level, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var v uint64
		if err := rows.Scan(&id, &v); err != nil {
			return nil, err
		}
		out[id] = v
	}
	return out, rows.Err()
}

// Groups implements Engine.
func (e *ClickHouse) Groups(ctx context.Context, level string, start time.Time) ([]GroupViews, error) {
	table, where := e.rollupWhere(level, start)
	rows, err := e.conn.Query(ctx, "SELECT grp, sum(views) AS v FROM "+table+" WHERE "+where+" AND grp != '' GROUP BY grp ORDER BY v DESC, grp ASC")
	if err != nil {
		return nil, fmt.Errorf("group values of %s: %w", level, err)
	}
	defer rows.Close()
	var out []GroupViews
	for rows.Next() {
		var g GroupViews
		if err := rows.Scan(&g.Group, &g.Views); err != nil {
			return nil, err
		}
		out = append(out, g)
	}
	return out, rows.Err()
}

// Months implements Engine.
func (e *ClickHouse) Months(ctx context.Context) ([]time.Time, error) {
	rows, err := e.conn.Query(ctx, "SELECT DISTINCT start FROM "+e.t("rollup_meta")+" WHERE level = 'month' ORDER BY start")
	if err != nil {
		return nil, fmt.Errorf("list month rollups: %w", err)
	}
	defer rows.Close()
	var out []time.Time
	for rows.Next() {
		var t time.Time
		if err := rows.Scan(&t); err != nil {
			return nil, err
		}
		out = append(out, t.UTC())
	}
	return out, rows.Err()
}

// Close implements Engine: it closes the shards' connections it opened; the one it was
// given belongs to the caller.
func (e *ClickHouse) Close() error {
	var errs []error
	for _, s := range e.shards {
		if s.conn != e.conn {
			errs = append(errs, s.conn.Close())
		}
	}
	e.shards = nil
	return errors.Join(errs...)
}
