package batch

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"

	"trending/archive"
	"trending/model"
	"trending/model/topk"
)

// Native is the Go-native exact engine of the embedded mode: it aggregates the archive
// reader's rows with maps and keeps each rollup as one value in a bbolt file (sorted
// item/views pairs), so a day is the sum of 24 small values, not a rescan of events. The
// rows of the group values a build keeps (Built.Groups) are a second value per rollup, in a
// bucket of their own per level. Each Build call is one bbolt transaction: atomic, like a
// ClickHouse partition swap.
type Native struct {
	db *bolt.DB
}

var (
	bucketMeta = []byte("meta")
	// levelBkt and groupBkt are the buckets of each level with a rollup of its own: "day",
	// "group-day".
	levelBkt, groupBkt = rollupBuckets()
)

func rollupBuckets() (rollups, groups map[string][]byte) {
	rollups, groups = map[string][]byte{}, map[string][]byte{}
	for _, lv := range rollupLevels() {
		rollups[lv], groups[lv] = []byte(lv), []byte("group-"+lv)
	}
	return rollups, groups
}

// OpenNative opens (creating) the rollup file at path.
func OpenNative(path string) (*Native, error) {
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open rollup file %s: %w (is another trending batch using it?)", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		bs := [][]byte{bucketMeta}
		for _, lv := range rollupLevels() {
			bs = append(bs, levelBkt[lv], groupBkt[lv])
		}
		for _, b := range bs {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("init rollup file %s: %w", path, err)
	}
	return &Native{db: db}, nil
}

// OpenNativeReadOnly opens an existing rollup file for reading only (a dry run's plan): it
// creates and changes nothing, and shares the file with other readers.
func OpenNativeReadOnly(path string) (*Native, error) {
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: 5 * time.Second, ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("open rollup file %s read-only: %w (is a trending batch or up writing it?)", path, err)
	}
	return &Native{db: db}, nil
}

func startKey(t time.Time) []byte { return []byte(t.UTC().Format(time.RFC3339)) }

func metaKey(level string, t time.Time) []byte {
	return []byte(level + "/" + t.UTC().Format(time.RFC3339))
}

// counts is one rollup: views per item.
type counts map[string]uint64

// encodeCounts writes the pairs sorted by item id, so equal rollups are equal bytes.
func encodeCounts(c counts) []byte {
	ids := make([]string, 0, len(c))
	for id := range c {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	buf := binary.AppendUvarint(nil, uint64(len(ids)))
	for _, id := range ids {
		buf = binary.AppendUvarint(buf, uint64(len(id)))
		buf = append(buf, id...)
		buf = binary.AppendUvarint(buf, c[id])
	}
	return buf
}

// eachCount decodes an encoded rollup.
func eachCount(b []byte, fn func(id string, views uint64)) error {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return errors.New("corrupt rollup: bad length")
	}
	b = b[k:]
	for range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return errors.New("corrupt rollup: bad item")
		}
		id := string(b[k : k+int(l)])
		b = b[k+int(l):]
		v, k2 := binary.Uvarint(b)
		if k2 <= 0 {
			return errors.New("corrupt rollup: bad views")
		}
		b = b[k2:]
		fn(id, v)
	}
	return nil
}

func addInto(dst counts, raw []byte) error {
	return eachCount(raw, func(id string, v uint64) { dst[id] += v })
}

// grouped is one rollup's rows of group values: views per item per value.
type grouped map[string]counts

// encodeGrouped writes the values sorted, each as its length and bytes, then its rollup's
// length and encodeCounts bytes.
func encodeGrouped(g grouped) []byte {
	names := make([]string, 0, len(g))
	for n, c := range g {
		if len(c) > 0 {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	buf := binary.AppendUvarint(nil, uint64(len(names)))
	for _, n := range names {
		c := encodeCounts(g[n])
		buf = binary.AppendUvarint(buf, uint64(len(n)))
		buf = append(buf, n...)
		buf = binary.AppendUvarint(buf, uint64(len(c)))
		buf = append(buf, c...)
	}
	return buf
}

// addGrouped decodes an encodeGrouped value into dst, summing.
func addGrouped(dst grouped, b []byte) error {
	n, k := binary.Uvarint(b)
	if k <= 0 {
		return errors.New("corrupt group rollup: bad length")
	}
	b = b[k:]
	part := func() ([]byte, error) {
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return nil, errors.New("corrupt group rollup: bad part")
		}
		p := b[k : k+int(l)]
		b = b[k+int(l):]
		return p, nil
	}
	for range n {
		name, err := part()
		if err != nil {
			return err
		}
		raw, err := part()
		if err != nil {
			return err
		}
		c := dst[string(name)]
		if c == nil {
			c = counts{}
			dst[string(name)] = c
		}
		if err := addInto(c, raw); err != nil {
			return err
		}
	}
	return nil
}

// BuildHours implements Engine.
func (e *Native) BuildHours(ctx context.Context, src Archive, day time.Time, hours []Built) ([]Meta, error) {
	type pk struct {
		p int32
		o int64
	}
	built := make([]counts, len(hours))
	groups := make([]grouped, len(hours))
	metas := make([]Meta, len(hours))
	for i, h := range hours {
		if !model.Day.Align(h.Start).Equal(model.Day.Align(day)) {
			panic("BUG: BuildHours of an hour outside the day")
		}
		c, g := counts{}, grouped{}
		seen := map[pk]struct{}{} // the second dedup guard, as the ClickHouse engine's GROUP BY
		// With a cap: the views of each (group, item, account), summed and capped after the
		// read (sum(least(c, Cap)), as the ClickHouse engine's query).
		type acct struct{ group, item, user string }
		var byAcct map[acct]uint64
		if h.Cap > 0 {
			byAcct = map[acct]uint64{}
		}
		add := func(group, item, user string, n uint64) {
			if byAcct != nil && user != "" {
				byAcct[acct{group, item, user}] += n
				return
			}
			cs := c
			if group != "" {
				if cs = g[group]; cs == nil {
					cs = counts{}
					g[group] = cs
				}
			}
			cs[item] += n
		}
		err := src.ReadHour(ctx, h.Start, func(r archive.Row) error {
			k := pk{r.Partition, r.Offset}
			if _, dup := seen[k]; dup {
				return nil
			}
			seen[k] = struct{}{}
			add("", r.ItemID, r.UserID, uint64(r.Count))
			if r.Region != "" && h.Groups.Accepts(r.Region) {
				add(r.Region, r.ItemID, r.UserID, uint64(r.Count))
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read hour %s: %w", h.Start.UTC().Format(time.RFC3339), err)
		}
		capped := byAcct
		byAcct = nil
		for a, n := range capped {
			add(a.group, a.item, "", min(n, uint64(h.Cap)))
		}
		built[i], groups[i] = c, g
		metas[i] = Meta{Fingerprint: h.Fingerprint, Through: h.Through, InputRows: uint64(len(seen))}
	}
	return metas, e.put(Hour, hours, built, groups, metas)
}

// put writes rollups, their group values' rows and their meta in one transaction.
func (e *Native) put(level string, bs []Built, cs []counts, gs []grouped, metas []Meta) error {
	version := time.Now().UnixMilli()
	return e.db.Update(func(tx *bolt.Tx) error {
		bk, gb, mb := tx.Bucket(levelBkt[level]), tx.Bucket(groupBkt[level]), tx.Bucket(bucketMeta)
		for i, b := range bs {
			if len(gs[i]) == 0 {
				if err := gb.Delete(startKey(b.Start)); err != nil {
					return err
				}
			} else if err := gb.Put(startKey(b.Start), encodeGrouped(gs[i])); err != nil {
				return err
			}
			var views uint64
			for _, v := range cs[i] {
				views += v
			}
			metas[i].Version, metas[i].Items, metas[i].Views = version, uint64(len(cs[i])), views
			if !levelOf(level).fromArchive() {
				metas[i].InputRows = uint64(len(cs[i]))
			}
			if len(cs[i]) == 0 {
				if err := bk.Delete(startKey(b.Start)); err != nil {
					return err
				}
			} else if err := bk.Put(startKey(b.Start), encodeCounts(cs[i])); err != nil {
				return err
			}
			m, err := json.Marshal(metas[i])
			if err != nil {
				return err
			}
			if err := mb.Put(metaKey(level, b.Start), m); err != nil {
				return err
			}
		}
		return nil
	})
}

// sumGroups sums the group values' rows of the rollups of level with start in [from, to).
func (e *Native) sumGroups(level string, from, to time.Time) (grouped, error) {
	g := grouped{}
	err := e.db.View(func(tx *bolt.Tx) error {
		cur := tx.Bucket(groupBkt[level]).Cursor()
		hi := startKey(to)
		for k, v := cur.Seek(startKey(from)); k != nil && bytes.Compare(k, hi) < 0; k, v = cur.Next() {
			if err := addGrouped(g, v); err != nil {
				return fmt.Errorf("%s %s: %w", level, k, err)
			}
		}
		return nil
	})
	return g, err
}

// sumRange sums the rollups of level with start in [from, to).
func (e *Native) sumRange(level string, from, to time.Time) (counts, error) {
	c := counts{}
	err := e.db.View(func(tx *bolt.Tx) error {
		cur := tx.Bucket(levelBkt[level]).Cursor()
		hi := startKey(to)
		for k, v := cur.Seek(startKey(from)); k != nil && bytes.Compare(k, hi) < 0; k, v = cur.Next() {
			if err := addInto(c, v); err != nil {
				return fmt.Errorf("%s %s: %w", level, k, err)
			}
		}
		return nil
	})
	return c, err
}

// BuildDays implements Engine.
func (e *Native) BuildDays(_ context.Context, month time.Time, days []Built) error {
	cs, gs := make([]counts, len(days)), make([]grouped, len(days))
	for i, d := range days {
		if !model.Month.Align(d.Start).Equal(model.Month.Align(month)) {
			panic("BUG: BuildDays of a day outside the month")
		}
		c, err := e.sumRange(Hour, d.Start, model.Day.Next(d.Start))
		if err != nil {
			return err
		}
		g, err := e.sumGroups(Hour, d.Start, model.Day.Next(d.Start))
		if err != nil {
			return err
		}
		cs[i], gs[i] = c, g
	}
	metas := make([]Meta, len(days))
	for i, d := range days {
		metas[i].Fingerprint, metas[i].Through = d.Fingerprint, d.Through
	}
	return e.put(Day, days, cs, gs, metas)
}

// BuildMonths implements Engine.
func (e *Native) BuildMonths(_ context.Context, year time.Time, months []Built) error {
	cs, gs := make([]counts, len(months)), make([]grouped, len(months))
	for i, m := range months {
		if m.Start.UTC().Year() != year.UTC().Year() {
			panic("BUG: BuildMonths of a month outside the year")
		}
		c, err := e.sumRange(Day, m.Start, m.Through)
		if err != nil {
			return err
		}
		g, err := e.sumGroups(Day, m.Start, m.Through)
		if err != nil {
			return err
		}
		cs[i], gs[i] = c, g
	}
	metas := make([]Meta, len(months))
	for i, m := range months {
		metas[i].Fingerprint, metas[i].Through = m.Fingerprint, m.Through
	}
	return e.put(Month, months, cs, gs, metas)
}

// Meta implements Engine.
func (e *Native) Meta(_ context.Context, level string, start time.Time) (Meta, error) {
	var m Meta
	err := e.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketMeta).Get(metaKey(level, start))
		if raw == nil {
			return fmt.Errorf("%s %s: %w", level, start.UTC().Format(time.RFC3339), ErrNoRollup)
		}
		return json.Unmarshal(raw, &m)
	})
	return m, err
}

// span returns the level of rollup and the range of starts a window's rows are summed over.
func span(level string, start time.Time) (string, time.Time, time.Time) {
	return levelOf(level).span(start)
}

// load returns a window's rows of every item (group "") or of one group value.
func (e *Native) load(level string, start time.Time, group string) (counts, error) {
	lv, from, to := span(level, start)
	if group == "" {
		return e.sumRange(lv, from, to)
	}
	g, err := e.sumGroups(lv, from, to)
	if err != nil {
		return nil, err
	}
	if c := g[group]; c != nil {
		return c, nil
	}
	return counts{}, nil
}

// Groups implements Engine.
func (e *Native) Groups(_ context.Context, level string, start time.Time) ([]GroupViews, error) {
	lv, from, to := span(level, start)
	g, err := e.sumGroups(lv, from, to)
	if err != nil {
		return nil, err
	}
	out := make([]GroupViews, 0, len(g))
	for name, c := range g {
		var v uint64
		for _, n := range c {
			v += n
		}
		out = append(out, GroupViews{name, v})
	}
	slices.SortFunc(out, func(a, b GroupViews) int { return cmp.Or(cmp.Compare(b.Views, a.Views), cmp.Compare(a.Group, b.Group)) })
	return out, nil
}

// TopK implements Engine.
func (e *Native) TopK(_ context.Context, level string, start time.Time, group string, k int) ([]topk.Entry, uint64, uint64, error) {
	c, err := e.load(level, start, group)
	if err != nil {
		return nil, 0, 0, err
	}
	all := make([]topk.Entry, 0, len(c))
	var views uint64
	for id, v := range c {
		all = append(all, topk.Entry{Item: id, Count: v})
		views += v
	}
	topk.Sort(all) // by views, then item: ClickHouse's ORDER BY v DESC, item_id ASC
	return all[:min(k, len(all))], views, uint64(len(c)), nil
}

// Counts implements Engine.
func (e *Native) Counts(_ context.Context, level string, start time.Time, group string, items []string) (map[string]uint64, error) {
	c, err := e.load(level, start, group)
	if err != nil {
		return nil, err
	}
	out := make(map[string]uint64, len(items))
	for _, id := range items {
		if v, ok := c[id]; ok {
			out[id] = v
		}
	}
	return out, nil
}

// Months implements Engine.
func (e *Native) Months(_ context.Context) ([]time.Time, error) {
	var out []time.Time
	err := e.db.View(func(tx *bolt.Tx) error {
		prefix := []byte(Month + "/")
		cur := tx.Bucket(bucketMeta).Cursor()
		for k, _ := cur.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = cur.Next() {
			t, err := time.Parse(time.RFC3339, string(k[len(prefix):]))
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return nil
	})
	return out, err
}

// Close implements Engine.
func (e *Native) Close() error { return e.db.Close() }
