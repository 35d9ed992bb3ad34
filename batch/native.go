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
)

// Native is the Go-native exact engine of the embedded mode: it aggregates the archive
// reader's rows with maps and keeps each rollup as one value in a bbolt file (sorted
// item/views pairs), so a day is the sum of 24 small values, not a rescan of events. Each
// Build call is one bbolt transaction: atomic, like a ClickHouse partition swap.
type Native struct {
	db *bolt.DB
}

var (
	bucketMeta = []byte("meta")
	levelBkt   = map[string][]byte{Hour: []byte("hour"), Day: []byte("day"), Month: []byte("month")}
)

// OpenNative opens (creating) the rollup file at path.
func OpenNative(path string) (*Native, error) {
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open rollup file %s: %w (is another trending batch using it?)", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, levelBkt[Hour], levelBkt[Day], levelBkt[Month]} {
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

// BuildHours implements Engine.
func (e *Native) BuildHours(ctx context.Context, src Archive, day time.Time, hours []Built) ([]Meta, error) {
	type pk struct {
		p int32
		o int64
	}
	built := make([]counts, len(hours))
	metas := make([]Meta, len(hours))
	for i, h := range hours {
		if !model.Align(Day, h.Start).Equal(model.Align(Day, day)) {
			panic("BUG: BuildHours of an hour outside the day")
		}
		c := counts{}
		seen := map[pk]struct{}{} // the second dedup guard, as the ClickHouse engine's GROUP BY
		err := src.ReadHour(ctx, h.Start, func(r archive.Row) error {
			k := pk{r.Partition, r.Offset}
			if _, dup := seen[k]; dup {
				return nil
			}
			seen[k] = struct{}{}
			c[r.ItemID] += uint64(r.Count)
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("read hour %s: %w", h.Start.UTC().Format(time.RFC3339), err)
		}
		built[i] = c
		metas[i] = Meta{Fingerprint: h.Fingerprint, Through: h.Through, InputRows: uint64(len(seen))}
	}
	return metas, e.put(Hour, hours, built, metas)
}

// put writes rollups and their meta in one transaction.
func (e *Native) put(level string, bs []Built, cs []counts, metas []Meta) error {
	version := time.Now().UnixMilli()
	return e.db.Update(func(tx *bolt.Tx) error {
		bk, mb := tx.Bucket(levelBkt[level]), tx.Bucket(bucketMeta)
		for i, b := range bs {
			var views uint64
			for _, v := range cs[i] {
				views += v
			}
			metas[i].Version, metas[i].Items, metas[i].Views = version, uint64(len(cs[i])), views
			if level != Hour {
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
	cs := make([]counts, len(days))
	for i, d := range days {
		if !model.Align(Month, d.Start).Equal(model.Align(Month, month)) {
			panic("BUG: BuildDays of a day outside the month")
		}
		c, err := e.sumRange(Hour, d.Start, model.Next(Day, d.Start))
		if err != nil {
			return err
		}
		cs[i] = c
	}
	metas := make([]Meta, len(days))
	for i, d := range days {
		metas[i].Fingerprint, metas[i].Through = d.Fingerprint, d.Through
	}
	return e.put(Day, days, cs, metas)
}

// BuildMonths implements Engine.
func (e *Native) BuildMonths(_ context.Context, year time.Time, months []Built) error {
	cs := make([]counts, len(months))
	for i, m := range months {
		if m.Start.UTC().Year() != year.UTC().Year() {
			panic("BUG: BuildMonths of a month outside the year")
		}
		c, err := e.sumRange(Day, m.Start, m.Through)
		if err != nil {
			return err
		}
		cs[i] = c
	}
	metas := make([]Meta, len(months))
	for i, m := range months {
		metas[i].Fingerprint, metas[i].Through = m.Fingerprint, m.Through
	}
	return e.put(Month, months, cs, metas)
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

func (e *Native) load(level string, start time.Time) (counts, error) {
	switch level {
	case All:
		return e.sumRange(Month, time.Unix(0, 0), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))
	case Week: // no rollup of its own: the sum of its days
		return e.sumRange(Day, start, model.Next(Week, start))
	}
	return e.sumRange(level, start, start.Add(time.Second))
}

// TopK implements Engine.
func (e *Native) TopK(_ context.Context, level string, start time.Time, k int) ([]Ranked, uint64, uint64, error) {
	c, err := e.load(level, start)
	if err != nil {
		return nil, 0, 0, err
	}
	all := make([]Ranked, 0, len(c))
	var views uint64
	for id, v := range c {
		all = append(all, Ranked{id, v})
		views += v
	}
	slices.SortFunc(all, func(a, b Ranked) int { return cmp.Or(cmp.Compare(b.Views, a.Views), cmp.Compare(a.ItemID, b.ItemID)) })
	return all[:min(k, len(all))], views, uint64(len(c)), nil
}

// Counts implements Engine.
func (e *Native) Counts(_ context.Context, level string, start time.Time, items []string) (map[string]uint64, error) {
	c, err := e.load(level, start)
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
