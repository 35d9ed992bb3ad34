package clickhouse_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"trending/internal/itest"
	"trending/internal/setting"
	"trending/model"
	chddl "trending/schemas/clickhouse"
	"trending/serving/store"
	chstore "trending/serving/store/clickhouse"
	"trending/serving/store/storetest"
)

// openClickHouse migrates a fresh database on the real server and opens the store on it.
func openClickHouse(t *testing.T) *chstore.Store {
	s, _, _ := openClickHouseRaw(t)
	return s
}

// openClickHouseRaw also returns a raw connection and the database name.
func openClickHouseRaw(t *testing.T) (*chstore.Store, driver.Conn, string) {
	t.Helper()
	addr := itest.ClickHouse(t)
	ctx := itest.Context(t, time.Minute)
	o := chstore.DefaultOptions()
	o.Addr, o.Database = addr, itest.Underscored(t, "trending_it_store")
	conn, err := o.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+o.Database)
		conn.Close()
	})
	if _, err := chddl.Apply(ctx, conn, o.Database); err != nil {
		t.Fatal(err)
	}
	s, err := chstore.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, conn, o.Database
}

// insertUnchecked writes a row the way a second process would after its Admit check passed
// against an older state: straight into the table, in the documented row format
// (schemas/clickhouse/001_serving.sql).
func insertUnchecked(t *testing.T, conn driver.Conn, db string, l model.List) {
	t.Helper()
	body, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	ord := uint64(l.Version)
	live := uint8(1)
	start := time.Unix(0, 0)
	if !l.Start.IsZero() {
		live, start = 0, l.Start
		if l.Source == model.SourceBatch {
			ord += 1 << 62
		}
	}
	ctx := context.Background()
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+".serving_lists (win, start, live, ord, seq, version, source, body, written_at)")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append(l.Window, start, live, ord, uint64(time.Now().Add(time.Hour).UnixNano()), l.Version, string(l.Source), string(body), time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
}

func TestClickHouse(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return openClickHouse(t) })
}

// TestClickHouseStaleWriterNeverWins plays the race the mutex cannot stop: a second process
// whose check passed before a newer write landed. Two stores on one table stand for the two
// processes; the loser's row is stored but must never be served.
func TestClickHouseStaleWriterNeverWins(t *testing.T) {
	a, conn, db := openClickHouseRaw(t)
	ctx := context.Background()
	day := storetest.T0.Truncate(24 * time.Hour)
	for _, c := range []struct {
		name         string
		first, stale model.List
	}{
		{"older speed version", storetest.MakeList("hour", time.Time{}, 20, model.SourceSpeed, 3, 20),
			storetest.MakeList("hour", time.Time{}, 19, model.SourceSpeed, 3, 19)},
		{"speed after batch", storetest.MakeList("day", day, 5, model.SourceBatch, 3, 5),
			storetest.MakeList("day", day, 900, model.SourceSpeed, 3, 900)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := a.Put(ctx, c.first); err != nil {
				t.Fatal(err)
			}
			// The stale writer's check ran before c.first landed; its insert comes later
			// (a later seq), and must still lose.
			insertUnchecked(t, conn, db, c.stale)
			got, err := a.Get(ctx, c.first.Key())
			if err != nil {
				t.Fatal(err)
			}
			if got.Version != c.first.Version || got.Source != c.first.Source {
				t.Fatalf("served %s v%d, want the admitted %s v%d", got.Source, got.Version, c.first.Source, c.first.Version)
			}
			since, err := a.Since(ctx, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range since {
				if l.Key() == c.first.Key() && l.Version != c.first.Version {
					t.Fatalf("Since served v%d, want v%d", l.Version, c.first.Version)
				}
			}
			stamps, err := a.Versions(ctx, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			for _, st := range stamps {
				if st.Key == c.first.Key() && st.Rank != store.Rank(c.first) {
					t.Fatalf("Versions: rank %d, want the admitted list's %d", st.Rank, store.Rank(c.first))
				}
			}
		})
	}
}

func TestClickHouseLiveBatchOrderedByVersion(t *testing.T) {
	s := openClickHouse(t)
	ctx := context.Background()
	if err := s.Put(ctx, storetest.MakeList("all", time.Time{}, 100, model.SourceSpeed, 2, 1)); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(ctx, storetest.MakeList("all", time.Time{}, 50, model.SourceBatch, 2, 1)); !errors.Is(err, store.ErrStaleVersion) {
		t.Fatalf("older batch over a live list: %v, want ErrStaleVersion", err)
	}
	if err := s.Put(ctx, storetest.MakeList("all", time.Time{}, 150, model.SourceBatch, 2, 1)); err != nil {
		t.Fatalf("newer batch over a live list: %v", err)
	}
	if err := s.Put(ctx, storetest.MakeList("all", time.Time{}, 160, model.SourceSpeed, 2, 1)); err != nil {
		t.Fatalf("newer speed over a live batch list: %v", err)
	}
}

func TestParseClickHouseDSN(t *testing.T) {
	for _, c := range []struct {
		in       string
		addr, db string
		ok       bool
	}{
		{"clickhouse://127.0.0.1:39100/trending", "127.0.0.1:39100", "trending", true},
		{"clickhouse://u:p@h:9000", "h:9000", "trending", true},
		{"h:9000/other", "h:9000", "other", true},
		{"http://h:9000/x", "", "", false},
		{"clickhouse://h:9000/bad-name", "", "", false},
	} {
		t.Run(c.in, func(t *testing.T) {
			o, err := chstore.ParseDSN(c.in)
			if (err == nil) != c.ok {
				t.Fatalf("err = %v, want ok=%v", err, c.ok)
			}
			if c.ok && (o.Addr != c.addr || o.Database != c.db) {
				t.Fatalf("got %s/%s, want %s/%s", o.Addr, o.Database, c.addr, c.db)
			}
		})
	}
}

// TestClickHouseStatusColumns: Put fills migration 004's status and dropped_late columns
// from the list, and a row from before it (no status in the body, the columns at their
// defaults, a speed list that said exact) is served with its status derived and exact false.
func TestClickHouseStatusColumns(t *testing.T) {
	s, conn, db := openClickHouseRaw(t)
	ctx := context.Background()
	prov := storetest.MakeList("hour", storetest.T0, 60, model.SourceSpeed, 2, 30)
	prov.DroppedLate = 12
	if err := s.Put(ctx, prov); err != nil {
		t.Fatal(err)
	}
	var status string
	var dropped uint64
	if err := conn.QueryRow(ctx, "SELECT status, dropped_late FROM "+db+".serving_lists WHERE win = 'hour' AND live = 0").Scan(&status, &dropped); err != nil {
		t.Fatal(err)
	}
	if status != string(model.StatusProvisional) || dropped != 12 {
		t.Fatalf("columns status %q dropped_late %d, want provisional, 12", status, dropped)
	}

	old := storetest.MakeList("day", model.Day.Align(storetest.T0).AddDate(0, 0, -1), 5000, model.SourceSpeed, 2, 7)
	old.Status, old.Exact, old.ErrorBound = "", true, nil
	for i := range old.Items {
		old.Items[i].Exact = true
	}
	insertUnchecked(t, conn, db, old)
	got, err := s.Get(ctx, old.Key())
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != model.StatusProvisional || got.Exact || got.Items[0].Exact {
		t.Fatalf("pre-004 row: status %q exact %v, want provisional and not exact", got.Status, got.Exact)
	}
}

// TestClickHouseVersionsReadNoBody: the versions poll reads the key columns only. A row whose
// body is not JSON (which Since cannot decode) still has its stamp reported, and a row another
// process wrote (a later seq) moves the stamp of its key.
func TestClickHouseVersionsReadNoBody(t *testing.T) {
	s, conn, db := openClickHouseRaw(t)
	ctx := context.Background()
	if err := s.Put(ctx, storetest.MakeList("hour", time.Time{}, 3, model.SourceSpeed, 2, 3)); err != nil {
		t.Fatal(err)
	}
	before, err := s.Versions(ctx, storetest.T0)
	if err != nil || len(before) != 1 {
		t.Fatalf("versions: %v %v", before, err)
	}
	insertUnchecked(t, conn, db, storetest.MakeList("hour", time.Time{}, 4, model.SourceSpeed, 2, 4))
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+".serving_lists (win, start, live, ord, seq, version, source, body, written_at)")
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Append("day", storetest.T0.Truncate(24*time.Hour), uint8(0), uint64(9), uint64(77), int64(9), "speed", "{not json", time.Now()); err != nil {
		t.Fatal(err)
	}
	if err := b.Send(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Since(ctx, storetest.T0.Truncate(24*time.Hour)); err == nil {
		t.Fatal("Since decoded a body that is not JSON")
	}
	got, err := s.Versions(ctx, storetest.T0.Truncate(24*time.Hour))
	if err != nil {
		t.Fatalf("versions over a row whose body is not JSON: %v", err)
	}
	slices.SortFunc(got, func(a, b store.Stamp) int { return strings.Compare(a.Key.String(), b.Key.String()) })
	if len(got) != 2 || got[0].Key != (model.Key{Window: "day", Start: storetest.T0.Truncate(24 * time.Hour)}) || got[0].Rank != 9 || got[0].Seq != 77 ||
		got[1].Key != (model.Key{Window: "hour"}) || got[1].Rank != 4 || got[1].Seq <= before[0].Seq {
		t.Fatalf("versions: %+v (before the other writer: %+v)", got, before)
	}
}

// TestClickHouseOptionsZeroMeansZero: the defaults are accepted as they are, and a zero
// dial timeout is refused by field before anything connects (clickhouse-go would read it as
// its own 30 s), not replaced by the default.
func TestClickHouseOptionsZeroMeansZero(t *testing.T) {
	o := chstore.DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("DefaultClickHouseOptions: %v", err)
	}
	o.DialTimeout = 0
	if err := o.Validate(); !errors.Is(err, setting.ErrConfig) || !strings.Contains(err.Error(), "DialTimeout:") {
		t.Fatalf("Validate with DialTimeout 0: %v, want a setting error naming DialTimeout", err)
	}
	if _, err := o.Conn(context.Background()); !errors.Is(err, setting.ErrConfig) {
		t.Fatalf("Conn with DialTimeout 0: %v, want the setting error", err)
	}
}
