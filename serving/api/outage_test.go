package api

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trending/internal/itest"
	"trending/model"
	chddl "trending/schemas/clickhouse"
	chstore "trending/serving/store/clickhouse"
	"trending/serving/store/storetest"
)

// TestFaultServeThroughClickHouseOutage stops the real ClickHouse under a running API over the
// ClickHouse store: /readyz stays 200 with "store": "unreachable" (and
// trending_serving_store_up 0) and GET /v1/trending?window=hour keeps serving the list loaded
// before; once ClickHouse is started again the store is "ok" and a list Put after the restart
// is served.
func TestFaultServeThroughClickHouseOutage(t *testing.T) {
	itest.Faults(t)
	addr := itest.ClickHouse(t)
	ctx := itest.Context(t, 3*time.Minute)
	o := chstore.DefaultOptions()
	o.Addr, o.Database = addr, itest.Underscored(t, "trending_it_outage")
	conn, err := o.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := chddl.Apply(ctx, conn, o.Database); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	t.Cleanup(func() { // after the Cleanup that restarts ClickHouse (Cleanups run last first)
		if c, err := o.Conn(context.Background()); err == nil {
			_ = c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+o.Database)
			c.Close()
		}
	})
	ch, err := chstore.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ch.Close() })
	hourList := func(version int64) model.List {
		l := storetest.MakeList("hour", time.Time{}, version, model.SourceSpeed, 10, 100)
		now := time.Now().UTC().Truncate(time.Second)
		l.AsOf, l.ComputedAt = now.Add(-time.Second), now
		return l
	}
	if err := ch.Put(ctx, hourList(1)); err != nil {
		t.Fatal(err)
	}

	reg := prometheus.NewRegistry()
	cfg := DefaultConfig()
	cfg.Registerer, cfg.Gatherer = reg, reg
	cfg.RefreshInterval, cfg.FullRefreshInterval, cfg.VersionPollInterval = 200*time.Millisecond, time.Second, 100*time.Millisecond
	srv, err := New(cfg, ch, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})

	get := func(target string) (int, []byte) {
		t.Helper()
		resp, err := http.Get(url + target)
		if err != nil {
			t.Fatalf("GET %s: %v", target, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, body
	}
	ready := func() (int, ReadyResponse) {
		t.Helper()
		code, body := get("/readyz")
		var r ReadyResponse
		if code == 200 {
			if err := json.Unmarshal(body, &r); err != nil {
				t.Fatalf("readyz body %s: %v", body, err)
			}
		}
		return code, r
	}
	version := func() int64 {
		t.Helper()
		code, body := get("/v1/trending?window=hour")
		var l ListResponse
		if code != 200 || json.Unmarshal(body, &l) != nil {
			t.Fatalf("GET /v1/trending?window=hour: %d %s", code, body)
		}
		return l.Version
	}
	metric := func(line string) bool {
		_, body := get("/metrics")
		return strings.Contains(string(body), "\n"+line+"\n")
	}
	await := func(what string, d time.Duration, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(d); !cond(); time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("after %v: %s", d, what)
			}
		}
	}
	await("ready with the store ok", 10*time.Second, func() bool { c, r := ready(); return c == 200 && r.Store == StoreOK })
	if v := version(); v != 1 {
		t.Fatalf("hour list version %d before the outage, want 1", v)
	}

	stopped := time.Now()
	itest.Stop(t, "clickhouse")
	var r ReadyResponse
	await("/readyz 200 saying the store is unreachable", 10*time.Second, func() bool {
		var c int
		c, r = ready()
		if c != 200 {
			t.Fatalf("/readyz %d during the outage, want 200 (the lists held are served)", c)
		}
		return r.Store == StoreUnreachable
	})
	if r.StoreFailingSince.IsZero() || r.StoreError == "" || r.Lists == 0 || r.LastRefresh.After(stopped) {
		t.Fatalf("readyz during the outage: %+v", r)
	}
	if !metric("trending_serving_store_up 0") {
		t.Error("trending_serving_store_up is not 0 during the outage")
	}
	// Several refreshes fail meanwhile; the list and readiness stay.
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if v := version(); v != 1 {
			t.Fatalf("hour list version %d during the outage, want the last loaded, 1", v)
		}
		if c, r := ready(); c != 200 || r.Store != StoreUnreachable {
			t.Fatalf("readyz during the outage: %d %+v", c, r)
		}
	}
	outage := time.Since(stopped)

	itest.Start(t, "clickhouse")
	await("the store ok again", 20*time.Second, func() bool { c, r := ready(); return c == 200 && r.Store == StoreOK })
	if !metric("trending_serving_store_up 1") {
		t.Error("trending_serving_store_up is not 1 after the restart")
	}
	if err := ch.Put(ctx, hourList(2)); err != nil {
		t.Fatalf("put after the restart: %v", err)
	}
	await("the list put after the restart served", 10*time.Second, func() bool { return version() == 2 })
	t.Logf("served through a %v ClickHouse outage (stop included); recovered in %v after the stop", outage.Round(time.Millisecond), time.Since(stopped).Round(time.Millisecond))
}
