package itest_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"

	"trending/internal/itest"
)

// TestFaultStopStartClickHouse: Stop (SIGTERM) and Kill (SIGKILL) take the real server down (its
// port refuses), Start brings the same server back (same port, same data: a row written
// before is still there), and a test that ends early after Kill (here a skip; a failure
// unwinds the same way) gets the server restarted by its Cleanup.
func TestFaultStopStartClickHouse(t *testing.T) {
	itest.Faults(t)
	addr := itest.ClickHouse(t)
	ctx := itest.Context(t, 2*time.Minute)
	open := func() clickhouse.Conn {
		t.Helper()
		conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, DialTimeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		return conn
	}
	conn := open()
	table := itest.Underscored(t, "restart")
	if err := conn.Exec(ctx, "CREATE TABLE "+table+" (x UInt64) ENGINE = MergeTree() ORDER BY x"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = open().Exec(context.Background(), "DROP TABLE IF EXISTS "+table) })
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+table+" (x)") // 18.16 takes inserts as batches
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(uint64(42)); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}

	itest.Stop(t, "clickhouse")
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Fatalf("%s still accepts connections after Stop", addr)
	}
	itest.Start(t, "clickhouse")
	var x uint64
	if err := open().QueryRow(ctx, "SELECT x FROM "+table).Scan(&x); err != nil || x != 42 {
		t.Fatalf("after Start: x=%d err=%v, want the row written before the stop", x, err)
	}

	itest.Kill(t, "clickhouse")
	itest.Start(t, "clickhouse")
	if err := open().QueryRow(ctx, "SELECT x FROM "+table).Scan(&x); err != nil || x != 42 {
		t.Fatalf("after Kill and Start: x=%d err=%v, want the row written before", x, err)
	}

	t.Run("cleanup restarts", func(t *testing.T) {
		itest.Kill(t, "clickhouse")
		t.Skip("ending the subtest with the server stopped; its Cleanup must start it")
	})
	if err := open().Ping(ctx); err != nil {
		t.Fatalf("after a subtest that stopped the server and ended: %v", err)
	}
}
