package main

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"trending/internal/itest"
	chstore "trending/serving/store/clickhouse"
)

// TestMigrateTwice runs `trending migrate` twice on a fresh database of the real server:
// the first applies every file, the second nothing.
func TestMigrateTwice(t *testing.T) {
	addr := itest.ClickHouse(t)
	db := itest.Underscored(t, "trending_it_migrate")
	t.Cleanup(func() {
		o, _ := chstore.ParseDSN(addr)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if conn, err := o.Conn(ctx); err == nil {
			_ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+db)
			conn.Close()
		}
	})
	dsn := "clickhouse://" + addr + "/" + db
	out, err := runTrending(t, "migrate", "--clickhouse", dsn)
	if err != nil {
		t.Fatalf("first migrate: %v\n%s", err, out)
	}
	if !strings.Contains(out, "schema 0 -> ") || !strings.Contains(out, "001_serving.sql") {
		t.Fatalf("first migrate said %q", out)
	}
	out, err = runTrending(t, "migrate", "--clickhouse", dsn)
	if err != nil || !strings.Contains(out, "nothing to do") {
		t.Fatalf("second migrate: %v, %q; want nothing to do", err, out)
	}
	// The serving store opens on the migrated database through --store.
	st, err := openStore(dsn)
	if err != nil {
		t.Fatalf("open store %s: %v", dsn, err)
	}
	st.Close()
}

func TestMigrateBadDSN(t *testing.T) {
	_, err := runTrending(t, "migrate", "--clickhouse", "http://x:1/db")
	var ue usageError
	if !errors.As(err, &ue) {
		t.Fatalf("bad dsn: %v, want a usage error", err)
	}
}
