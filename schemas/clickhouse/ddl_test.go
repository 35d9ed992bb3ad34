package clickhouse_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"trending/internal/itest"
	chddl "trending/schemas/clickhouse"
)

func TestMigrationsWellFormed(t *testing.T) {
	ms := chddl.Migrations()
	if len(ms) < 2 || ms[0].Version != 1 {
		t.Fatalf("want migrations 001.. in order, got %d starting at %d", len(ms), ms[0].Version)
	}
	for i, m := range ms {
		if m.Version != i+1 {
			t.Errorf("%s: version %d, want %d (no gaps)", m.Name, m.Version, i+1)
		}
		if len(m.Statements) == 0 {
			t.Errorf("%s: no statements", m.Name)
		}
		for _, st := range m.Statements {
			// 18.16 lacks these; keep the DDL portable (README, DESIGN.md).
			for _, bad := range []string{"DateTime64", "LowCardinality", "TTL", "Nullable"} {
				if strings.Contains(st, bad) {
					t.Errorf("%s uses %s, which Debian's ClickHouse 18.16 lacks", m.Name, bad)
				}
			}
			_, _, add := chddl.AddColumn(st)
			if !strings.HasPrefix(st, "CREATE TABLE IF NOT EXISTS ") && !add {
				t.Errorf("%s: statement is not CREATE TABLE IF NOT EXISTS or ALTER TABLE ... ADD COLUMN (reruns must be harmless): %.60s", m.Name, st)
			}
			if add && !strings.Contains(st, " DEFAULT ") {
				t.Errorf("%s: ADD COLUMN without a DEFAULT: rows written before it need one: %.80s", m.Name, st)
			}
		}
	}
}

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []string
	}{
		{"empty", "", nil},
		{"comments only", "-- a\n  -- b\n", nil},
		{"two", "-- c\nCREATE TABLE a (x UInt8)\nENGINE = Log;\n\nCREATE TABLE b (y UInt8) ENGINE = Log;\n",
			[]string{"CREATE TABLE a (x UInt8)\nENGINE = Log", "CREATE TABLE b (y UInt8) ENGINE = Log"}},
		{"no trailing semicolon", "SELECT 1", []string{"SELECT 1"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := chddl.Split(c.in); !slices.Equal(got, c.want) {
				t.Fatalf("Split = %q, want %q", got, c.want)
			}
		})
	}
}

func TestValidDatabase(t *testing.T) {
	for name, ok := range map[string]bool{"trending": true, "t_1": true, "": false, "1x": false, "a-b": false, "a;DROP": false} {
		if err := chddl.ValidDatabase(name); (err == nil) != ok {
			t.Errorf("ValidDatabase(%q) = %v, want ok=%v", name, err, ok)
		}
	}
}

// TestApplyTwice migrates a fresh database on the real server, then again: the second run
// applies nothing and the tables are there.
func TestApplyTwice(t *testing.T) {
	addr := itest.ClickHouse(t)
	ctx := itest.Context(t, 60*time.Second)
	conn, err := ch.Open(&ch.Options{Addr: []string{addr}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	db := itest.Underscored(t, "trending_it_ddl")
	t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+db) })

	first, err := chddl.Apply(ctx, conn, db)
	if err != nil {
		t.Fatal(err)
	}
	if first.From != 0 || first.To != chddl.Latest() || len(first.Ran) != len(chddl.Migrations()) {
		t.Fatalf("first run: %+v, want 0 -> %d applying every file", first, chddl.Latest())
	}
	second, err := chddl.Apply(ctx, conn, db)
	if err != nil {
		t.Fatal(err)
	}
	if second.From != chddl.Latest() || second.To != chddl.Latest() || len(second.Ran) != 0 {
		t.Fatalf("second run: %+v, want a no-op at %d", second, chddl.Latest())
	}
	v, err := chddl.Version(ctx, conn, db)
	if err != nil || v != chddl.Latest() {
		t.Fatalf("Version = %d, %v; want %d", v, err, chddl.Latest())
	}
	var rows uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM "+db+".schema_migrations").Scan(&rows); err != nil || rows != uint64(len(chddl.Migrations())) {
		t.Fatalf("schema_migrations rows = %d, %v; want one per file", rows, err)
	}
	for _, tb := range []string{"serving_lists", "rollup_hour", "rollup_day", "rollup_month", "rollup_meta"} {
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = ?", db, tb).Scan(&n); err != nil || n != 1 {
			t.Errorf("table %s.%s: count %d, %v", db, tb, n, err)
		}
	}
	// Migration 004's columns, read back with their defaults.
	for _, col := range []string{"status", "dropped_late"} {
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = 'serving_lists' AND name = ?", db, col).Scan(&n); err != nil || n != 1 {
			t.Errorf("column %s.serving_lists.%s: count %d, %v", db, col, n, err)
		}
	}
	// A database from a newer binary is refused rather than half-understood.
	if err := conn.Exec(ctx, "INSERT INTO "+db+".schema_migrations (version, name, applied_at) SELECT 999, 'x', now()"); err != nil {
		t.Fatal(err)
	}
	if _, err := chddl.Apply(ctx, conn, db); !errors.Is(err, chddl.ErrNewerSchema) {
		t.Fatalf("apply over a newer schema: %v, want ErrNewerSchema", err)
	}
}

func TestAddColumn(t *testing.T) {
	for _, c := range []struct{ stmt, table, col, decl string }{
		{"ALTER TABLE serving_lists ADD COLUMN status String DEFAULT '' AFTER source", "serving_lists", "status", "status String DEFAULT ''"},
		{"ALTER TABLE serving_lists ON CLUSTER c ADD COLUMN dropped_late UInt64 DEFAULT 0", "serving_lists", "dropped_late", "dropped_late UInt64 DEFAULT 0"},
		{"CREATE TABLE IF NOT EXISTS a (x UInt8) ENGINE = Log", "", "", ""},
	} {
		table, col, ok := chddl.AddColumn(c.stmt)
		_, decl, _ := chddl.ColumnDecl(c.stmt)
		if ok != (c.table != "") || table != c.table || col != c.col || decl != c.decl {
			t.Errorf("AddColumn(%q) = %q %q %v, decl %q; want %q %q, decl %q", c.stmt, table, col, ok, decl, c.table, c.col, c.decl)
		}
	}
}

func TestDropTable(t *testing.T) {
	for _, c := range []struct{ stmt, table string }{
		{"DROP TABLE IF EXISTS rollup_hour ON CLUSTER c", "rollup_hour"},
		{"DROP TABLE IF EXISTS rollup_hour", "rollup_hour"},
		{"DROP TABLE rollup_hour", ""}, // a rerun must be harmless: IF EXISTS
		{"DROP TABLE IF EXISTS a; DROP TABLE b", ""},
		{"CREATE TABLE IF NOT EXISTS a (x UInt8) ENGINE = Log", ""},
	} {
		table, ok := chddl.DropTable(c.stmt)
		if ok != (c.table != "") || table != c.table {
			t.Errorf("DropTable(%q) = %q %v, want %q", c.stmt, table, ok, c.table)
		}
	}
}
