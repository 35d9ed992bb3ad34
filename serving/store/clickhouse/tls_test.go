package clickhouse_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"trending/internal/itest"
	chstore "trending/serving/store/clickhouse"
)

// TestParseClickHouseDSNSecurity covers the TLS parameters of a DSN: secure=true turns TLS on,
// ca=FILE trusts that bundle (and implies TLS), anything else is refused.
func TestParseClickHouseDSNSecurity(t *testing.T) {
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		in      string
		tls, ok bool
	}{
		{"clickhouse://h:9440/db?secure=true", true, true},
		{"clickhouse://h:9000/db?secure=false", false, true},
		{"clickhouse://u:p@h:9000/db", false, true},
		{"clickhouse://h:9440/db?secure=maybe", false, false},
		{"clickhouse://h:9440/db?ca=" + notPEM, false, false},
		{"clickhouse://h:9440/db?ca=" + filepath.Join(dir, "missing.pem"), false, false},
		{"clickhouse://h:9440/db?compress=lz4", false, false},
	} {
		t.Run(c.in, func(t *testing.T) {
			o, err := chstore.ParseDSN(c.in)
			if (err == nil) != c.ok {
				t.Fatalf("err = %v, want ok=%v", err, c.ok)
			}
			if c.ok && (o.TLS != nil) != c.tls {
				t.Fatalf("TLS = %v, want %v", o.TLS != nil, c.tls)
			}
		})
	}
}

// TestClickHouseTLSIsUsed dials the plaintext local server with secure=true: the TLS
// handshake must fail, which shows the option reaches the driver.
func TestClickHouseTLSIsUsed(t *testing.T) {
	addr := itest.ClickHouse(t)
	o, err := chstore.ParseDSN("clickhouse://" + addr + "/default?secure=true")
	if err != nil {
		t.Fatal(err)
	}
	o.DialTimeout = 2 * time.Second
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if conn, err := o.Conn(ctx); err == nil {
		conn.Close()
		t.Fatal("a TLS connection to the plaintext port succeeded: TLS was not used")
	}
	plain, _ := chstore.ParseDSN("clickhouse://" + addr + "/default")
	conn, err := plain.Conn(ctx)
	if err != nil {
		t.Fatalf("plaintext control: %v", err)
	}
	conn.Close()
}
