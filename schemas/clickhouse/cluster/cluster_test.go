// Tests of the cluster DDL variant: it must give the application the same tables and
// columns as the single-node DDL, run every statement ON CLUSTER with replicated storage
// (an ALTER of a table replicated on every node excepted), and put a Distributed table over
// every sharded one. The rendered statements are checked here; TestClusterApplies applies
// them to the real two-shard cluster of `make test` (infra/local: two ClickHouse servers and
// a ZooKeeper); the single-node variant is applied to the real server, and mixing the two
// is refused there.
package cluster_test

import (
	"context"
	"errors"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"trending/internal/itest"
	chddl "trending/schemas/clickhouse"
)

// table is one CREATE TABLE statement, taken apart.
type table struct {
	name, onCluster, engine string
	columns                 []string // "name Type", whitespace collapsed
}

var (
	createRe   = regexp.MustCompile(`(?s)^CREATE TABLE IF NOT EXISTS ([A-Za-z_][A-Za-z0-9_]*)( ON CLUSTER (\S+))? \((.*?)\n\) ENGINE = (.*)$`)
	spaceRe    = regexp.MustCompile(`\s+`)
	zkPathRe   = regexp.MustCompile(`Replicated\w*MergeTree\('([^']+)', '\{replica\}'`)
	replArgsRe = regexp.MustCompile(`^Replicated(\w+)\('[^']+', '\{replica\}'(?:, )?`)
	distribRe  = regexp.MustCompile(`^Distributed\((\S+), (\S+), (\w+), cityHash64\(item_id\)\)$`)
)

func parse(t *testing.T, stmt string) table {
	t.Helper()
	m := createRe.FindStringSubmatch(stmt)
	if m == nil {
		t.Fatalf("statement is not CREATE TABLE IF NOT EXISTS name [ON CLUSTER c] (...) ENGINE = ...:\n%s", stmt)
	}
	tb := table{name: m[1], onCluster: m[3], engine: spaceRe.ReplaceAllString(strings.TrimSpace(m[5]), " ")}
	for _, c := range strings.Split(m[4], ",") {
		tb.columns = append(tb.columns, spaceRe.ReplaceAllString(strings.TrimSpace(c), " "))
	}
	return tb
}

func tables(t *testing.T, ms []chddl.Migration, render func(string) string) map[string]table {
	t.Helper()
	out := map[string]table{}
	for _, m := range ms {
		for _, st := range m.Statements {
			if name, ok := chddl.DropTable(render(st)); ok {
				// Only a Distributed table, which holds no data, is dropped (to be created
				// again with a new column: 005).
				if tb, found := out[name]; !found || !strings.HasPrefix(tb.engine, "Distributed") {
					t.Fatalf("%s: drops %s, which is not a Distributed table an earlier migration creates", m.Name, name)
				}
				delete(out, name)
				continue
			}
			if name, decl, ok := chddl.ColumnDecl(render(st)); ok {
				tb, found := out[name]
				if !found {
					t.Fatalf("%s: adds a column to %s, which no earlier migration creates", m.Name, name)
				}
				tb.columns = append(tb.columns, spaceRe.ReplaceAllString(decl, " "))
				out[name] = tb
				continue
			}
			tb := parse(t, render(st))
			if _, dup := out[tb.name]; dup {
				t.Fatalf("%s: table %s created twice", m.Name, tb.name)
			}
			out[tb.name] = tb
		}
	}
	return out
}

func TestClusterVariantMatchesSingleNode(t *testing.T) {
	single, cluster := chddl.Migrations(), chddl.ClusterMigrations()
	versions := func(ms []chddl.Migration) (vs []int) {
		for _, m := range ms {
			vs = append(vs, m.Version)
		}
		return vs
	}
	if !slices.Equal(versions(single), versions(cluster)) {
		t.Fatalf("versions: single node %v, cluster %v: every migration needs both variants", versions(single), versions(cluster))
	}
	for i := range single {
		if single[i].Name != cluster[i].Name {
			t.Errorf("migration %d: %s vs cluster/%s: name them alike", single[i].Version, single[i].Name, cluster[i].Name)
		}
	}

	const db, name = "trending_x", "prod_cluster"
	render := func(s string) string { return chddl.Render(s, db, name) }
	st := tables(t, single, func(s string) string { return s })
	ct := tables(t, cluster, render)

	for n, s := range st {
		t.Run(n, func(t *testing.T) {
			c, ok := ct[n]
			if !ok {
				t.Fatalf("the cluster variant has no table %s, which the application reads", n)
			}
			if !slices.Equal(s.columns, c.columns) {
				t.Errorf("columns differ:\n single  %q\n cluster %q", s.columns, c.columns)
			}
			// A sharded table is read through a Distributed table of the same name over
			// name_local, which keeps the single-node table's engine, partitions and order.
			if m := distribRe.FindStringSubmatch(c.engine); m != nil {
				if m[1] != name || m[2] != db || m[3] != n+"_local" {
					t.Errorf("Distributed(%s, %s, %s): want (%s, %s, %s_local)", m[1], m[2], m[3], name, db, n)
				}
				local, ok := ct[n+"_local"]
				if !ok {
					t.Fatalf("%s is Distributed over %s_local, which is not created", n, n)
				}
				if !slices.Equal(local.columns, s.columns) {
					t.Errorf("%s_local columns %q, want %q", n, local.columns, s.columns)
				}
				c = local
			}
			if !strings.HasPrefix(c.engine, "Replicated") {
				t.Fatalf("engine %q: want a Replicated engine (single node: %q)", c.engine, s.engine)
			}
			// Same engine family, arguments, partitioning and order once the replication
			// arguments are taken out: ReplicatedX('path', '{replica}'[, ver]) is X([ver]).
			stripped := replArgsRe.ReplaceAllString(c.engine, "$1(")
			if norm(stripped) != norm(s.engine) {
				t.Errorf("engine without replication %q, want %q", stripped, s.engine)
			}
		})
	}

	paths := map[string]string{}
	for n, c := range ct {
		if c.onCluster != name {
			t.Errorf("%s: ON CLUSTER %q, want %q: every cluster statement runs on every node", n, c.onCluster, name)
		}
		if _, ok := st[n]; !ok && !strings.HasSuffix(n, "_local") {
			t.Errorf("%s: only in the cluster variant; the application knows no such table", n)
		}
		if m := zkPathRe.FindStringSubmatch(c.engine); m != nil {
			if other, dup := paths[m[1]]; dup {
				t.Errorf("%s and %s share the replication path %s", n, other, m[1])
			}
			paths[m[1]] = n
			if !strings.Contains(m[1], "/"+db+"/") || !strings.HasSuffix(m[1], "/"+n) {
				t.Errorf("%s: replication path %s: want one per database and table", n, m[1])
			}
			if strings.HasSuffix(n, "_local") != strings.Contains(m[1], "{shard}") {
				t.Errorf("%s: replication path %s: sharded tables (name_local) and only they have {shard}", n, m[1])
			}
		}
	}

	for _, m := range cluster {
		for _, s := range m.Statements {
			r := render(s)
			// A sharded table (name_local, one replica set per shard) is altered ON CLUSTER;
			// a table replicated on every node is altered once, on one node, and replication
			// alters the others: ON CLUSTER would run the ALTER on every shard, and each but the
			// first fails with "column already exists" (18.16, seen on the two-shard cluster).
			if tb, _, add := chddl.AddColumn(r); add {
				on := strings.Contains(r, " ON CLUSTER "+name+" ")
				everyNode := false
				if m := zkPathRe.FindStringSubmatch(ct[tb].engine); m != nil {
					everyNode = !strings.Contains(m[1], "{shard}")
				}
				switch {
				case everyNode && on:
					t.Errorf("%s: ALTER ON CLUSTER of %s, which is replicated on every node: alter it on one node: %s", m.Name, tb, r)
				case !everyNode && !on:
					t.Errorf("%s: ALTER of %s without ON CLUSTER %s: a sharded table is altered on every shard: %s", m.Name, tb, name, r)
				}
			}
			if strings.Contains(r, "${") {
				t.Errorf("%s: placeholder left after Render: %s", m.Name, r)
			}
			for _, bad := range []string{"DateTime64", "LowCardinality", "TTL", "Nullable"} {
				if strings.Contains(s, bad) {
					t.Errorf("%s uses %s, which ClickHouse 18.16 lacks", m.Name, bad)
				}
			}
		}
	}
}

// norm removes "()" after an engine name without arguments so MergeTree() equals MergeTree.
func norm(engine string) string { return strings.ReplaceAll(engine, "()", "") }

func TestRender(t *testing.T) {
	for _, c := range []struct{ in, db, cluster, want string }{
		{"CREATE TABLE IF NOT EXISTS a (x UInt8) ENGINE = Log", "d", "c", "CREATE TABLE IF NOT EXISTS a (x UInt8) ENGINE = Log"},
		{"CREATE TABLE IF NOT EXISTS a ON CLUSTER ${CLUSTER} (x UInt8) ENGINE = Distributed(${CLUSTER}, ${DB}, a_local, rand())", "d", "c",
			"CREATE TABLE IF NOT EXISTS a ON CLUSTER c (x UInt8) ENGINE = Distributed(c, d, a_local, rand())"},
	} {
		if got := chddl.Render(c.in, c.db, c.cluster); got != c.want {
			t.Errorf("Render(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestOptionsValidate(t *testing.T) {
	for _, c := range []struct {
		cluster string
		ok      bool
	}{{"", true}, {"prod", true}, {"prod_2", true}, {"2prod", false}, {"a-b", false}, {"a b", false}, {"x;DROP", false}} {
		if err := (chddl.Options{Cluster: c.cluster}).Validate(); (err == nil) != c.ok {
			t.Errorf("Validate(cluster %q) = %v, want ok=%v", c.cluster, err, c.ok)
		}
	}
}

// TestSingleNodeAppliesAndVariantsDoNotMix applies the single-node DDL to the real server,
// then asks for the cluster variant on the same database: it must be refused with ErrVariant
// before any statement runs (the ON CLUSTER statements would fail on a server without a
// cluster anyway, but with a less useful message).
func TestSingleNodeAppliesAndVariantsDoNotMix(t *testing.T) {
	addr := itest.ClickHouse(t)
	ctx := itest.Context(t, time.Minute)
	conn, err := ch.Open(&ch.Options{Addr: []string{addr}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	db := itest.Underscored(t, "trending_it_cluster")
	t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db) })

	res, err := chddl.ApplyOptions(ctx, conn, db, chddl.Options{})
	if err != nil {
		t.Fatalf("single-node apply: %v", err)
	}
	if res.To != chddl.Latest() {
		t.Fatalf("applied to version %d, want %d", res.To, chddl.Latest())
	}
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name IN ('serving_lists', 'rollup_hour', 'rollup_day', 'rollup_month', 'rollup_meta')", db).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 5 {
		t.Fatalf("%d of the 5 application tables exist after the single-node apply", n)
	}
	_, err = chddl.ApplyOptions(ctx, conn, db, chddl.Options{Cluster: "trending"})
	if !errors.Is(err, chddl.ErrVariant) {
		t.Fatalf("cluster apply on a single-node database: %v, want ErrVariant", err)
	}
	if !strings.Contains(err.Error(), "single node") {
		t.Errorf("error %q should say the database is single node", err)
	}
	// The single-node variant still reruns cleanly.
	if res, err := chddl.Apply(ctx, conn, db); err != nil || len(res.Ran) != 0 {
		t.Fatalf("rerun: %v, ran %v; want nothing to do", err, res.Ran)
	}
}

// TestClusterApplies applies the cluster variant to the real two-shard cluster: every table
// exists on both servers (the sharded ones as name_local beside a Distributed name), the
// columns migrations add are on every node, and a rerun applies nothing. Before 004 altered
// serving_lists on one node it failed here: ON CLUSTER ran the ALTER on both shards of a
// table replicated on every node, and the second found the column already there.
func TestClusterApplies(t *testing.T) {
	addr, cluster := itest.ClickHouseCluster(t)
	ctx := itest.Context(t, 2*time.Minute)
	conn, err := ch.Open(&ch.Options{Addr: []string{addr}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	db := itest.Underscored(t, "trending_it_cluster_ddl")
	t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db+" ON CLUSTER "+cluster) })
	res, err := chddl.ApplyOptions(ctx, conn, db, chddl.Options{Cluster: cluster})
	if err != nil {
		t.Fatalf("cluster apply: %v", err)
	}
	if res.To != chddl.Latest() {
		t.Fatalf("applied to version %d, want %d", res.To, chddl.Latest())
	}
	rows, err := conn.Query(ctx, "SELECT host_name, port FROM system.clusters WHERE cluster = ? ORDER BY shard_num, replica_num", cluster)
	if err != nil {
		t.Fatal(err)
	}
	var nodes []string
	for rows.Next() {
		var host string
		var port uint16
		if err := rows.Scan(&host, &port); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, net.JoinHostPort(host, strconv.Itoa(int(port))))
	}
	rows.Close()
	if len(nodes) < 2 {
		t.Fatalf("cluster %s has %d nodes, want 2 or more", cluster, len(nodes))
	}
	var want []string
	for _, node := range nodes {
		c, err := ch.Open(&ch.Options{Addr: []string{node}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		rows, err := c.Query(ctx, "SELECT concat(table, '.', name, ' ', type) FROM system.columns WHERE database = ? ORDER BY table, name", db)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			got = append(got, s)
		}
		rows.Close()
		c.Close()
		for _, col := range []string{"serving_lists.status String", "serving_lists.dropped_late UInt64", "rollup_hour_local.views UInt64", "rollup_hour.views UInt64",
			"rollup_hour_local.grp String", "rollup_hour.grp String", "rollup_month.grp String"} {
			if !slices.Contains(got, col) {
				t.Errorf("node %s lacks column %s", node, col)
			}
		}
		if want == nil {
			want = got
		} else if !slices.Equal(got, want) {
			t.Errorf("node %s has columns %q, node %s %q", node, got, nodes[0], want)
		}
	}
	if res, err := chddl.ApplyOptions(ctx, conn, db, chddl.Options{Cluster: cluster}); err != nil || len(res.Ran) != 0 {
		t.Fatalf("rerun: %v, ran %v; want nothing to do", err, res.Ran)
	}
}
