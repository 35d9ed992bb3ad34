package clickhouse

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"trending/internal/setting"
	"trending/model"
	"trending/serving/store"

	ch "github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Options says where the ClickHouse serving table lives. Start from
// DefaultOptions (ParseDSN does): Conn takes every field as it is.
type Options struct {
	// Addr is the native-protocol address; default 127.0.0.1:39100 (infra/local).
	Addr string
	// Database holds the serving_lists table (schemas/clickhouse/001_serving.sql, created by
	// `trending migrate`); default "trending".
	Database string
	// Username and Password; empty means the server's default user.
	Username, Password string
	// TLS, when not nil, encrypts the connection (the server's secure native port, 9440 by
	// default); nil is plaintext. ParseDSN sets it for ?secure=true or ?ca=FILE.
	TLS *tls.Config
	// DialTimeout bounds connecting; default 5 s. It must be positive: clickhouse-go would
	// read zero as its own 30 s.
	DialTimeout time.Duration
}

// DefaultOptions returns the local development server's options.
func DefaultOptions() Options {
	return Options{Addr: "127.0.0.1:39100", Database: "trending", DialTimeout: 5 * time.Second}
}

var chIdent = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate reports options that cannot work, saying what to change.
func (o Options) Validate() error {
	if o.Addr == "" {
		return errors.New("clickhouse address is empty: use host:port, e.g. 127.0.0.1:39100")
	}
	if !chIdent.MatchString(o.Database) {
		return fmt.Errorf("clickhouse database %q: use letters, digits and underscores", o.Database)
	}
	if o.DialTimeout <= 0 {
		return setting.Invalid("DialTimeout", "%s: must be positive (default %s)", o.DialTimeout, DefaultOptions().DialTimeout)
	}
	return nil
}

// ParseDSN reads clickhouse://[user[:password]@]host:port[/database][?secure=true]
// [&ca=FILE]; a bare host:port is accepted too. Missing parts take DefaultOptions'
// values. secure=true turns on TLS with the system roots; ca=FILE (a PEM bundle) trusts those
// CAs instead and implies secure.
func ParseDSN(dsn string) (Options, error) {
	o := DefaultOptions()
	if !strings.Contains(dsn, "://") {
		dsn = "clickhouse://" + dsn
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme != "clickhouse" || u.Host == "" {
		return o, fmt.Errorf("clickhouse dsn %q: want clickhouse://host:port/database", dsn)
	}
	o.Addr = u.Host
	if db := strings.Trim(u.Path, "/"); db != "" {
		o.Database = db
	}
	if u.User != nil {
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
	}
	q := u.Query()
	for k := range q {
		if k != "secure" && k != "ca" {
			return o, fmt.Errorf("clickhouse dsn: unknown parameter %q: use secure=true or ca=FILE", k)
		}
	}
	if sec := q.Get("secure"); sec != "" || q.Get("ca") != "" {
		on, err := strconv.ParseBool(cmp.Or(sec, "true"))
		if err != nil {
			return o, fmt.Errorf("clickhouse dsn: secure=%q: use true or false", sec)
		}
		if on || q.Get("ca") != "" {
			o.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		if ca := q.Get("ca"); ca != "" {
			pem, err := os.ReadFile(ca)
			if err != nil {
				return o, fmt.Errorf("clickhouse CA file: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return o, fmt.Errorf("clickhouse CA file %s: no PEM certificate in it", ca)
			}
			o.TLS.RootCAs = pool
		}
	}
	return o, o.Validate()
}

// Conn opens a clickhouse-go connection pool for these options.
func (o Options) Conn(ctx context.Context) (driver.Conn, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	conn, err := ch.Open(&ch.Options{
		Addr:        []string{o.Addr},
		Auth:        ch.Auth{Database: "default", Username: o.Username, Password: o.Password},
		DialTimeout: o.DialTimeout,
		TLS:         o.TLS,
	})
	if err != nil {
		return nil, fmt.Errorf("open clickhouse %s: %w", o.Addr, err)
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, fmt.Errorf("ping clickhouse %s: %w (is it running? `make services-up` starts the local one)", o.Addr, err)
	}
	return conn, nil
}

// ClickHouse is the production serving store: the table serving_lists, one row per admitted
// write, each row a whole list (JSON), so a reader sees a whole list or the previous one.
// The columns status and dropped_late (migration 004) repeat the body's fields for queries
// over the table; reads take the body. Rows written before 004 have an empty status there and in
// their body, and are read with model.List.Normalize.
//
// ClickHouse has no conditional write, so store.Admit's check-then-write is made safe in two
// layers. Within one process a mutex serialises Puts: the check and the insert are atomic
// with respect to every other Put of this store. Across processes (an active and a standby
// merger, the batch) two writers may both pass the check; the reads then decide: every read
// picks, per key, the row with the largest (ord, seq), where ord is the version plus 2^62
// for an exact batch list of a calendar window. That is exactly the order store.Admit admits
// writes in for calendar keys and, on live keys, version order; so a stale write that
// slips in between another writer's check and insert is stored but never served, and a
// speed list that slips in after a batch list of the same calendar window never wins.
//
// The one place where version order and store.Admit differ (a batch list with a lower version
// than the stored speed list of a live key, which store.Admit accepts) is refused here with
// store.ErrStaleVersion: live lists are ordered by version alone, whoever writes them.
type Store struct {
	conn  driver.Conn
	table string // database.serving_lists

	mu      sync.Mutex // serialises Put: check, then insert
	lastSeq uint64
}

// Open connects to the serving table, which `trending migrate` creates.
func Open(ctx context.Context, o Options) (*Store, error) {
	conn, err := o.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = 'serving_lists'", o.Database).Scan(&n); err != nil {
		conn.Close()
		return nil, fmt.Errorf("look for %s.serving_lists: %w", o.Database, err)
	}
	if n == 0 {
		conn.Close()
		return nil, fmt.Errorf("clickhouse %s: table %s.serving_lists is missing: run `trending migrate --clickhouse clickhouse://%s/%s`", o.Addr, o.Database, o.Addr, o.Database)
	}
	return &Store{conn: conn, table: o.Database + ".serving_lists"}, nil
}

// Put implements Store.
func (c *Store) Put(ctx context.Context, l model.List) error {
	l.Start, l.End, l.AsOf, l.ComputedAt = utc(l.Start), utc(l.End), utc(l.AsOf), utc(l.ComputedAt)
	if err := l.Validate(); err != nil {
		return err
	}
	if uint64(l.Version) >= store.BatchPriority {
		return fmt.Errorf("%w: version %d too large for the ClickHouse store (max 2^62)", store.ErrInvalid, l.Version)
	}
	if !l.Start.IsZero() && (l.Start.Unix() < 0 || l.Start.Unix() > 1<<32-1) {
		return fmt.Errorf("%w: start %s outside ClickHouse DateTime", store.ErrInvalid, l.Start)
	}
	body, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode %s: %w", l.Key(), err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var cur *model.List
	switch got, err := c.Get(ctx, l.Key()); {
	case err == nil:
		cur = &got
	case !errors.Is(err, store.ErrNotFound):
		return err
	}
	if err := store.Admit(cur, l); err != nil {
		return err
	}
	if cur != nil && store.Rank(l) < store.Rank(*cur) {
		return fmt.Errorf("%s: version %d older than stored %d (live lists are ordered by version): %w", l.Key(), l.Version, cur.Version, store.ErrStaleVersion)
	}
	seq := uint64(time.Now().UnixNano())
	if seq <= c.lastSeq {
		seq = c.lastSeq + 1
	}
	c.lastSeq = seq
	b, err := c.conn.PrepareBatch(ctx, "INSERT INTO "+c.table+" (win, start, live, ord, seq, version, source, status, dropped_late, body, written_at)")
	if err != nil {
		return fmt.Errorf("put %s: %w", l.Key(), err)
	}
	live := uint8(0)
	if l.Start.IsZero() {
		live = 1
	}
	if err := b.Append(l.Key().Name(), chTime(l.Start), live, store.Rank(l), seq, l.Version, string(l.Source), string(l.Status), l.DroppedLate, string(body), time.Now().UTC()); err != nil {
		return errors.Join(fmt.Errorf("put %s: %w", l.Key(), err), b.Abort())
	}
	if err := b.Send(); err != nil {
		return fmt.Errorf("put %s: %w", l.Key(), err)
	}
	return nil
}

// chTime maps the zero time (live lists) to the Unix epoch, DateTime's zero.
func chTime(t time.Time) time.Time {
	if t.IsZero() {
		return time.Unix(0, 0).UTC()
	}
	return t
}

func unixOrZero(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.Unix()
}

// Get implements Store.
func (c *Store) Get(ctx context.Context, k model.Key) (model.List, error) {
	ls, err := c.query(ctx, "SELECT body FROM "+c.table+
		" WHERE win = ? AND start = toDateTime(?) ORDER BY ord DESC, seq DESC LIMIT 1", k.Name(), unixOrZero(k.Start))
	if err != nil {
		return model.List{}, fmt.Errorf("get %s: %w", k, err)
	}
	if len(ls) == 0 {
		return model.List{}, fmt.Errorf("%s: %w", k, store.ErrNotFound)
	}
	return ls[0], nil
}

// Range implements Store.
func (c *Store) Range(ctx context.Context, window string, from, to time.Time) ([]model.List, error) {
	ls, err := c.query(ctx, "SELECT body FROM "+c.table+
		" WHERE live = 0 AND win = ? AND start >= toDateTime(?) AND start < toDateTime(?)"+
		" ORDER BY start, ord DESC, seq DESC LIMIT 1 BY win, start", window, clampUnix(from), clampUnix(to))
	if err != nil {
		return nil, fmt.Errorf("range %s [%s, %s): %w", window, from.Format(time.RFC3339), to.Format(time.RFC3339), err)
	}
	return ls, nil
}

// Since implements Store.
func (c *Store) Since(ctx context.Context, since time.Time) ([]model.List, error) {
	ls, err := c.query(ctx, "SELECT body FROM "+c.table+
		" WHERE live = 1 OR start >= toDateTime(?)"+
		" ORDER BY live DESC, win, start, ord DESC, seq DESC LIMIT 1 BY win, start", clampUnix(since))
	if err != nil {
		return nil, fmt.Errorf("since %s: %w", since.Format(time.RFC3339), err)
	}
	return ls, nil
}

// Versions implements store.Versioner: per key of Since's rows, the (ord, seq) of the row reads
// pick, from the key columns alone (the table is columnar, so no body is read). Tuples
// compare element by element in 18.16 as in current ClickHouse.
func (c *Store) Versions(ctx context.Context, since time.Time) ([]store.Stamp, error) {
	rows, err := c.conn.Query(ctx, "SELECT win, start, live, tupleElement(max((ord, seq)), 1), tupleElement(max((ord, seq)), 2) FROM "+c.table+
		" WHERE live = 1 OR start >= toDateTime(?) GROUP BY win, start, live", clampUnix(since))
	if err != nil {
		return nil, fmt.Errorf("versions since %s: %w", since.Format(time.RFC3339), err)
	}
	defer rows.Close()
	var out []store.Stamp
	for rows.Next() {
		var (
			win       string
			start     time.Time
			live      uint8
			rank, seq uint64
		)
		if err := rows.Scan(&win, &start, &live, &rank, &seq); err != nil {
			return nil, fmt.Errorf("versions: %w", err)
		}
		k, ok := model.ParseName(win)
		if !ok {
			continue // no list of a malformed name can be admitted
		}
		if live == 0 {
			k.Start = start.UTC()
		}
		out = append(out, store.Stamp{Key: k, Rank: rank, Seq: seq})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("versions: %w", err)
	}
	return out, nil
}

// clampUnix keeps a range bound inside DateTime's range (1970 to 2106).
func clampUnix(t time.Time) int64 {
	return min(max(unixOrZero(t), 0), 1<<32-1)
}

func (c *Store) query(ctx context.Context, q string, args ...any) ([]model.List, error) {
	rows, err := c.conn.Query(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []model.List
	for rows.Next() {
		var body string
		if err := rows.Scan(&body); err != nil {
			return nil, err
		}
		var l model.List
		if err := json.Unmarshal([]byte(body), &l); err != nil {
			return nil, fmt.Errorf("decode stored list: %w", err)
		}
		out = append(out, l.Normalize())
	}
	return out, rows.Err()
}

// Close implements Store.
func (c *Store) Close() error { return c.conn.Close() }

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}
