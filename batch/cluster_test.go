package batch_test

import (
	"context"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"trending/batch"
	"trending/internal/itest"
	"trending/model"
	"trending/model/windowset"
	chddl "trending/schemas/clickhouse"
	chstore "trending/serving/store/clickhouse"
)

// openCHCluster migrates a fresh database on the two-shard test cluster (`trending migrate
// --cluster`) and returns the ClickHouse engine on it, and a query on one shard's server.
func openCHCluster(t *testing.T) (*batch.ClickHouse, chstore.Options, func(shard int, q string) []string) {
	t.Helper()
	addr, cluster := itest.ClickHouseCluster(t)
	ctx := itest.Context(t, 2*time.Minute)
	o := chstore.DefaultOptions()
	o.Addr, o.Database = addr, itest.Underscored(t, "trending_it_cluster_batch")
	conn, err := o.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+o.Database+" ON CLUSTER "+cluster)
		conn.Close()
	})
	if _, err := chddl.ApplyOptions(ctx, conn, o.Database, chddl.Options{Cluster: cluster}); err != nil {
		t.Fatal(err)
	}
	dial := func(ctx context.Context, addr string) (driver.Conn, error) {
		so := o
		so.Addr = addr
		return so.Conn(ctx)
	}
	cfg := batch.DefaultClickHouseConfig()
	cfg.Database, cfg.ChunkRows, cfg.Cluster, cfg.Dial = o.Database, 97, cluster, dial
	e, err := batch.NewClickHouse(ctx, conn, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	var shards []driver.Conn
	rows, err := conn.Query(ctx, "SELECT host_name, port FROM system.clusters WHERE cluster = ? AND replica_num = 1 ORDER BY shard_num", cluster)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var host string
		var port uint16
		if err := rows.Scan(&host, &port); err != nil {
			t.Fatal(err)
		}
		so := o
		so.Addr = net.JoinHostPort(host, strconv.Itoa(int(port)))
		c, err := so.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		shards = append(shards, c)
	}
	rows.Close()
	if len(shards) < 2 {
		t.Fatalf("cluster %s has %d shards, want 2 or more", cluster, len(shards))
	}
	query := func(shard int, q string) []string {
		rows, err := shards[shard].Query(context.Background(), "SELECT toString(tuple(*)) FROM ("+q+")")
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
	return e, o, query
}

// TestClusterSameAsOneServer: the truth-checked batch run (every hour, both days, the month
// and all time, with duplicated offsets in the archive, and the lists per region) on the
// two-shard cluster gives the same lists as on one server, each equal to the truth; each
// shard holds its own items' rows and no row is on both; a forced rerun on the cluster leaves
// the same rows and lists.
func TestClusterSameAsOneServer(t *testing.T) {
	f := newFixture(t)
	f.generate()
	now := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	f.progress(now)
	ws := append(spans(t, batch.Hour, day0, day0.Add(48*time.Hour)), spans(t, batch.Day, day0, day0.Add(48*time.Hour))...)
	ws = append(ws, batch.Window{Level: batch.Month, Start: model.Month.Align(day0)}, batch.Window{Level: batch.All})
	ctx := itest.Context(t, 5*time.Minute)

	one, _, _ := openCH(t)
	cl, o, onShard := openCHCluster(t)
	stOne, stCl := boltStore(t), boltStore(t)
	start := time.Now()
	groups := func(c *batch.Config) {
		c.Windows.Groups = windowset.Groups{By: windowset.ByRegion, Values: []string{"eu", "us"}}
	}
	if _, err := newRunner(t, f, one, stOne, now, groups).Recompute(ctx, ws); err != nil {
		t.Fatal(err)
	}
	oneTook, start := time.Since(start), time.Now()
	if _, err := newRunner(t, f, cl, stCl, now, groups).Recompute(ctx, ws); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d windows: one server %s, the two-shard cluster %s", len(ws), oneTook.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	keys := []model.Key{{Window: "day", Start: day0}, {Window: "day", Start: day0.Add(24 * time.Hour)},
		{Window: "month", Start: model.Month.Align(day0)}, {Window: "all"},
		{Window: "day", Start: day0, Group: "eu"}, {Window: "month", Start: model.Month.Align(day0), Group: "us"},
		{Window: "hour", Start: day0.Add(11 * time.Hour), Group: "eu"}}
	for _, h := range hoursOf(day0, 48) {
		if len(f.truth[h]) > 0 {
			keys = append(keys, model.Key{Window: "hour", Start: h})
		}
	}
	truth := func(k model.Key) map[string]uint64 {
		of := f.truthOf
		if k.Group != "" {
			of = func(hours ...time.Time) map[string]uint64 { return f.regionOf(k.Group, hours...) }
		}
		switch k.Window {
		case "hour":
			return of(k.Start)
		case "day":
			return of(hoursOf(k.Start, 24)...)
		}
		return of(hoursOf(day0, 48)...)
	}
	lists := func() map[model.Key][]model.Item {
		out := map[model.Key][]model.Item{}
		for _, k := range keys {
			out[k] = checkList(t, stCl, k, truth(k)).Items
		}
		return out
	}
	first := lists()
	for _, k := range keys {
		l, err := stOne.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(l.Items, first[k]) {
			t.Fatalf("%s: the cluster's list differs from one server's", k)
		}
	}

	// The rows are split by item between the shards: each has some, none has an item of the
	// other, and together they are the Distributed table's rows.
	var all []string
	items := map[string]int{}
	for s := range 2 {
		rows := onShard(s, "SELECT hour, item_id, views FROM "+o.Database+".rollup_hour_local ORDER BY hour, item_id")
		if len(rows) == 0 {
			t.Fatalf("shard %d holds no hour rollups", s+1)
		}
		for _, id := range onShard(s, "SELECT DISTINCT item_id FROM "+o.Database+".rollup_hour_local") {
			if other, ok := items[id]; ok {
				t.Fatalf("item %s on shards %d and %d", id, other+1, s+1)
			}
			items[id] = s
		}
		all = append(all, rows...)
	}
	slices.Sort(all)
	dist := onShard(0, "SELECT hour, item_id, views FROM "+o.Database+".rollup_hour")
	slices.Sort(dist)
	if !slices.Equal(all, dist) {
		t.Fatalf("the shards hold %d hour rows, the Distributed table reads %d", len(all), len(dist))
	}
	dump := func() []string {
		var out []string
		for s := range 2 {
			for _, tb := range []string{"rollup_hour_local", "rollup_day_local", "rollup_month_local"} {
				for _, r := range onShard(s, "SELECT * FROM "+o.Database+"."+tb) {
					out = append(out, tb+r)
				}
			}
		}
		slices.Sort(out)
		return out
	}
	before := dump()

	r := newRunner(t, f, cl, stCl, now.Add(time.Minute), func(c *batch.Config) { groups(c); c.Rebuild = true })
	rep, err := r.Recompute(ctx, ws)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Published() == 0 {
		t.Fatal("the forced rerun published nothing")
	}
	if after := dump(); !slices.Equal(before, after) {
		t.Fatalf("rollup rows changed on rerun: %d then %d", len(before), len(after))
	}
	second := lists()
	for _, k := range keys {
		if !slices.Equal(first[k], second[k]) {
			t.Fatalf("%s changed on rerun", k)
		}
	}
}
