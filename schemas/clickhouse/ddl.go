// Package clickhouse holds the ClickHouse DDL of trending as numbered migrations
// (NNN_name.sql, embedded) and applies them: the serving table (001), the batch layer's
// rollups (002), its trending-topics hour rollups (003), the lists' status (004) and the
// rollups' group column (005). `trending migrate` runs Apply; tests run it on a fresh
// database.
//
// cluster/ holds the same migrations for a ClickHouse cluster (ON CLUSTER, replicated tables,
// Distributed tables for reads over sharded rollups); `trending migrate --cluster NAME`
// applies that variant (ApplyOptions with Options.Cluster). Both variants have the same
// versions and give the application the same table names and columns.
//
// The SQL is kept to what both Debian's ClickHouse 18.16 and current ClickHouse accept: no
// DateTime64, LowCardinality or TTL; custom-partitioned MergeTree with PARTITION BY/ORDER BY.
package clickhouse

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

//go:embed *.sql cluster/*.sql
var files embed.FS

// Migration is one numbered DDL file.
type Migration struct {
	Version    int      // NNN of the file name
	Name       string   // the file name
	Statements []string // the file split on ';' at line ends, comments removed
}

var fileName = regexp.MustCompile(`^([0-9]{3})_[a-z0-9_]+\.sql$`)

// Migrations returns the embedded single-node migrations in version order. A malformed file
// name or a repeated version is a bug in this directory and panics.
func Migrations() []Migration { return migrationsIn(".") }

// ClusterMigrations returns the cluster variant (cluster/*.sql) in version order. Its
// statements hold the placeholders ${CLUSTER} and ${DB}, which Render fills in.
func ClusterMigrations() []Migration { return migrationsIn("cluster") }

func migrationsIn(dir string) []Migration {
	ents, err := fs.ReadDir(files, dir)
	if err != nil {
		panic("BUG: read embedded ddl: " + err.Error())
	}
	var out []Migration
	for _, e := range ents {
		if e.IsDir() {
			continue
		}
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil {
			panic("BUG: ddl file " + e.Name() + " is not named NNN_name.sql")
		}
		v, _ := strconv.Atoi(m[1])
		raw, _ := files.ReadFile(path.Join(dir, e.Name()))
		out = append(out, Migration{Version: v, Name: e.Name(), Statements: Split(string(raw))})
	}
	slices.SortFunc(out, func(a, b Migration) int { return a.Version - b.Version })
	for i := 1; i < len(out); i++ {
		if out[i].Version == out[i-1].Version {
			panic(fmt.Sprintf("BUG: two ddl files with version %03d", out[i].Version))
		}
	}
	return out
}

// Split cuts a SQL file into statements: it drops "--" comment lines and splits on a ';'
// that ends a line. The DDL here never puts ';' or "--" inside a string literal.
func Split(sql string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(t, ";") {
			s := strings.TrimSpace(cur.String())
			out = append(out, strings.TrimSpace(strings.TrimSuffix(s, ";")))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}

// Latest is the highest migration version.
func Latest() int {
	ms := Migrations()
	return ms[len(ms)-1].Version
}

// Applied is the outcome of Apply.
type Applied struct {
	Database string
	From, To int      // schema version before and after
	Ran      []string // file names applied by this call, in order
}

// ErrNewerSchema: the database was migrated by a newer trending than this binary.
var ErrNewerSchema = errors.New("database schema is newer than this binary")

var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ValidDatabase reports whether name can be used unquoted as a database name.
func ValidDatabase(name string) error {
	if !ident.MatchString(name) {
		return fmt.Errorf("clickhouse database %q: use letters, digits and underscores, not starting with a digit", name)
	}
	return nil
}

// ErrVariant: the database was migrated with the other DDL variant (single node or cluster).
var ErrVariant = errors.New("database was migrated with the other DDL variant")

// Options select the DDL variant Apply uses.
type Options struct {
	// Cluster is the name of a cluster in the servers' remote_servers configuration. Empty
	// (the default) applies the single-node DDL; set, the cluster variant (cluster/*.sql)
	// runs ON CLUSTER with replicated tables, and schema_migrations is replicated too.
	Cluster string
}

// Validate reports options that cannot work, saying what to change.
func (o Options) Validate() error {
	if o.Cluster != "" && !ident.MatchString(o.Cluster) {
		return fmt.Errorf("clickhouse cluster %q: use the name from remote_servers: letters, digits and underscores", o.Cluster)
	}
	return nil
}

// Render fills a cluster statement's placeholders: ${CLUSTER} with the cluster name and ${DB}
// with the database. Single-node statements have none and come back unchanged.
func Render(stmt, db, cluster string) string {
	return strings.NewReplacer("${CLUSTER}", cluster, "${DB}", db).Replace(stmt)
}

// Apply applies the single-node DDL: ApplyOptions with the default Options.
func Apply(ctx context.Context, conn driver.Conn, db string) (Applied, error) {
	return ApplyOptions(ctx, conn, db, Options{})
}

// ApplyOptions creates database db if it is missing and applies, in order, every migration
// of the variant opts selects that is newer than the version recorded in db.schema_migrations,
// recording each one after it succeeds. Every statement is CREATE TABLE IF NOT EXISTS,
// ALTER TABLE ... ADD COLUMN, which Apply skips when the column is already there (18.16 has
// no ADD COLUMN IF NOT EXISTS to rely on), or DROP TABLE IF EXISTS of a Distributed table
// (which holds no data: the cluster variant recreates one with a new column; Apply refuses
// to drop any other engine), so a run cut short and repeated is harmless, and a rerun with
// nothing new is a no-op. Table names are
// qualified with db, so conn may be opened on any database. A database migrated with the
// other variant is refused with ErrVariant before anything is created.
func ApplyOptions(ctx context.Context, conn driver.Conn, db string, opts Options) (Applied, error) {
	res := Applied{Database: db}
	if err := ValidDatabase(db); err != nil {
		return res, err
	}
	if err := opts.Validate(); err != nil {
		return res, err
	}
	if err := checkVariant(ctx, conn, db, opts.Cluster != ""); err != nil {
		return res, err
	}
	onCluster, engine, ms := "", "MergeTree()", Migrations()
	if opts.Cluster != "" {
		onCluster = " ON CLUSTER " + opts.Cluster
		engine = "ReplicatedMergeTree('/clickhouse/tables/all/" + db + "/schema_migrations', '{replica}')"
		ms = ClusterMigrations()
	}
	if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+db+onCluster); err != nil {
		return res, fmt.Errorf("create database %s: %w", db, err)
	}
	if err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS `+db+`.schema_migrations`+onCluster+` (
		version UInt32, name String, applied_at DateTime('UTC')
	) ENGINE = `+engine+` ORDER BY version`); err != nil {
		return res, fmt.Errorf("create %s.schema_migrations: %w", db, err)
	}
	var cur uint32
	if err := conn.QueryRow(ctx, "SELECT max(version) FROM "+db+".schema_migrations").Scan(&cur); err != nil {
		return res, fmt.Errorf("read schema version of %s: %w", db, err)
	}
	res.From, res.To = int(cur), int(cur)
	if latest := Latest(); int(cur) > latest {
		return res, fmt.Errorf("%s is at version %d, this binary knows up to %d: %w (upgrade trending)", db, cur, latest, ErrNewerSchema)
	}
	for _, m := range ms {
		if m.Version <= int(cur) {
			continue
		}
		for _, st := range m.Statements {
			if table, ok := DropTable(st); ok {
				var engine string
				err := conn.QueryRow(ctx, "SELECT engine FROM system.tables WHERE database = ? AND name = ?", db, table).Scan(&engine)
				switch {
				case err != nil && !errors.Is(err, sql.ErrNoRows):
					return res, fmt.Errorf("migration %s: look for table %s: %w", m.Name, table, err)
				case err == nil && engine != "Distributed":
					return res, fmt.Errorf("migration %s: BUG: it drops %s.%s, a %s table that holds data; migrations drop Distributed tables only", m.Name, db, table, engine)
				}
			}
			if table, col, ok := AddColumn(st); ok {
				var n uint64
				if err := conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?", db, table, col).Scan(&n); err != nil {
					return res, fmt.Errorf("migration %s: look for column %s.%s: %w", m.Name, table, col, err)
				}
				if n > 0 {
					continue // added by a run cut short before it was recorded
				}
			}
			if err := conn.Exec(ctx, Render(qualify(st, db), db, opts.Cluster)); err != nil {
				return res, fmt.Errorf("migration %s: %w\n%s", m.Name, err, st)
			}
		}
		if err := record(ctx, conn, db, m); err != nil {
			return res, fmt.Errorf("record migration %s: %w", m.Name, err)
		}
		res.To = m.Version
		res.Ran = append(res.Ran, m.Name)
	}
	return res, nil
}

// checkVariant refuses to mix variants: a replicated schema_migrations means the database
// was migrated with --cluster, a plain MergeTree one that it was not. A fresh database passes.
func checkVariant(ctx context.Context, conn driver.Conn, db string, cluster bool) error {
	rows, err := conn.Query(ctx, "SELECT engine FROM system.tables WHERE database = ? AND name = 'schema_migrations'", db)
	if err != nil {
		return fmt.Errorf("look for %s.schema_migrations: %w", db, err)
	}
	defer rows.Close()
	for rows.Next() {
		var engine string
		if err := rows.Scan(&engine); err != nil {
			return fmt.Errorf("read engine of %s.schema_migrations: %w", db, err)
		}
		replicated := strings.HasPrefix(engine, "Replicated")
		switch {
		case cluster && !replicated:
			return fmt.Errorf("%s was migrated for a single node (schema_migrations is %s): %w; migrate a new database with --cluster", db, engine, ErrVariant)
		case !cluster && replicated:
			return fmt.Errorf("%s was migrated for a cluster (schema_migrations is %s): %w; run migrate with --cluster", db, engine, ErrVariant)
		}
	}
	return rows.Err()
}

// record inserts one schema_migrations row. It uses a batch: 18.16 waits for a data block
// after an INSERT ... VALUES sent as a plain query over the native protocol.
func record(ctx context.Context, conn driver.Conn, db string, m Migration) error {
	b, err := conn.PrepareBatch(ctx, "INSERT INTO "+db+".schema_migrations (version, name, applied_at)")
	if err != nil {
		return err
	}
	if err := b.Append(uint32(m.Version), m.Name, time.Now().UTC()); err != nil {
		return errors.Join(err, b.Abort())
	}
	return b.Send()
}

var (
	dropTable   = regexp.MustCompile(`(?i)^(DROP TABLE IF EXISTS\s+)([A-Za-z_][A-Za-z0-9_]*)(\s+ON CLUSTER\s+\S+)?\s*$`)
	createTable = regexp.MustCompile(`(?i)^(CREATE TABLE IF NOT EXISTS\s+)([A-Za-z_][A-Za-z0-9_]*)(\s)`)
	alterTable  = regexp.MustCompile(`(?i)^(ALTER TABLE\s+)([A-Za-z_][A-Za-z0-9_]*)(\s)`)
	addColumn   = regexp.MustCompile(`(?is)^ALTER TABLE\s+([A-Za-z_][A-Za-z0-9_]*)(?:\s+ON CLUSTER\s+\S+)?\s+ADD COLUMN\s+([A-Za-z_][A-Za-z0-9_]*)\s+(.*?)\s*$`)
)

// DropTable reports whether stmt is DROP TABLE IF EXISTS t [ON CLUSTER c] and names the table.
func DropTable(stmt string) (table string, ok bool) {
	m := dropTable.FindStringSubmatch(stmt)
	if m == nil {
		return "", false
	}
	return m[2], true
}

// AddColumn reports whether stmt is ALTER TABLE t [ON CLUSTER c] ADD COLUMN name ..., the one
// kind of ALTER the migrations use, and names the table and the column.
func AddColumn(stmt string) (table, column string, ok bool) {
	m := addColumn.FindStringSubmatch(stmt)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

// ColumnDecl returns the "name Type [DEFAULT ...]" an ADD COLUMN statement adds, without its
// AFTER clause; ok is false for any other statement.
func ColumnDecl(stmt string) (table, decl string, ok bool) {
	m := addColumn.FindStringSubmatch(stmt)
	if m == nil {
		return "", "", false
	}
	rest := m[3]
	if i := strings.LastIndex(strings.ToUpper(rest), " AFTER "); i >= 0 {
		rest = rest[:i]
	}
	return m[1], m[2] + " " + strings.TrimSpace(rest), true
}

// qualify prefixes the table of a CREATE TABLE or an ALTER TABLE with db, so the DDL files
// stay free of a database name and the connection's default database does not matter.
func qualify(stmt, db string) string {
	switch {
	case dropTable.MatchString(stmt):
		return dropTable.ReplaceAllString(stmt, "${1}"+db+".${2}${3}")
	case createTable.MatchString(stmt):
		return createTable.ReplaceAllString(stmt, "${1}"+db+".${2}${3}")
	case alterTable.MatchString(stmt):
		if _, _, ok := AddColumn(stmt); !ok {
			panic("BUG: ddl ALTER statement is not ALTER TABLE ... ADD COLUMN: " + stmt)
		}
		return alterTable.ReplaceAllString(stmt, "${1}"+db+".${2}${3}")
	}
	panic("BUG: ddl statement is not CREATE TABLE IF NOT EXISTS, ALTER TABLE ... ADD COLUMN or DROP TABLE IF EXISTS: " + stmt)
}

// Version returns the schema version recorded in db, 0 if never migrated.
func Version(ctx context.Context, conn driver.Conn, db string) (int, error) {
	if err := ValidDatabase(db); err != nil {
		return 0, err
	}
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.tables WHERE database = ? AND name = 'schema_migrations'", db).Scan(&n); err != nil {
		return 0, fmt.Errorf("look for %s.schema_migrations: %w", db, err)
	}
	if n == 0 {
		return 0, nil
	}
	var v uint32
	if err := conn.QueryRow(ctx, "SELECT max(version) FROM "+db+".schema_migrations").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version of %s: %w", db, err)
	}
	return int(v), nil
}
