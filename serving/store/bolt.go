package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
	"trending/model"

	bolt "go.etcd.io/bbolt"
)

// Bolt is the embedded serving store: one bbolt file. Each Put is one bbolt transaction, so a
// reader sees the whole previous list or the whole new one.
type Bolt struct {
	db *bolt.DB
}

var bucketLists = []byte("lists")

// OpenBolt opens (creating) the store file at path.
func OpenBolt(path string) (*Bolt, error) {
	db, err := bolt.Open(path, 0o644, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open serving store %s: %w (is another trending process using it?)", path, err)
	}
	if err := db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketLists)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("init serving store %s: %w", path, err)
	}
	return &Bolt{db: db}, nil
}

// boltKey sorts calendar lists by start within a window: "cal/hour/2026-11-14T10:00:00Z".
func boltKey(k model.Key) []byte {
	if k.Live() {
		return []byte("live/" + k.Name())
	}
	return []byte("cal/" + k.Name() + "/" + k.Start.UTC().Format(time.RFC3339))
}

// Put implements Store.
func (b *Bolt) Put(_ context.Context, l model.List) error {
	l.Start, l.End, l.AsOf, l.ComputedAt = utc(l.Start), utc(l.End), utc(l.AsOf), utc(l.ComputedAt)
	return b.db.Update(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketLists)
		key := boltKey(l.Key())
		var cur *model.List
		if raw := bk.Get(key); raw != nil {
			var c model.List
			if err := json.Unmarshal(raw, &c); err != nil {
				return fmt.Errorf("decode stored %s: %w", l.Key(), err)
			}
			c = c.Normalize()
			cur = &c
		}
		if err := Admit(cur, l); err != nil {
			return err
		}
		raw, err := json.Marshal(l)
		if err != nil {
			return err
		}
		return bk.Put(key, raw)
	})
}

// Get implements Store.
func (b *Bolt) Get(_ context.Context, k model.Key) (model.List, error) {
	var l model.List
	err := b.db.View(func(tx *bolt.Tx) error {
		raw := tx.Bucket(bucketLists).Get(boltKey(k))
		if raw == nil {
			return fmt.Errorf("%s: %w", k, ErrNotFound)
		}
		return json.Unmarshal(raw, &l)
	})
	return l.Normalize(), err
}

// Range implements Store.
func (b *Bolt) Range(_ context.Context, window string, from, to time.Time) ([]model.List, error) {
	var out []model.List
	lo, hi := boltKey(model.Key{Window: window, Start: from.UTC()}), boltKey(model.Key{Window: window, Start: to.UTC()})
	err := b.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketLists).Cursor()
		for k, v := c.Seek(lo); k != nil && bytes.Compare(k, hi) < 0; k, v = c.Next() {
			var l model.List
			if err := json.Unmarshal(v, &l); err != nil {
				return fmt.Errorf("decode %s: %w", k, err)
			}
			out = append(out, l.Normalize())
		}
		return nil
	})
	return out, err
}

// Since implements Store.
func (b *Bolt) Since(_ context.Context, since time.Time) ([]model.List, error) {
	var out []model.List
	err := b.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketLists).ForEach(func(k, v []byte) error {
			var l model.List
			if err := json.Unmarshal(v, &l); err != nil {
				return fmt.Errorf("decode %s: %w", k, err)
			}
			if l.Start.IsZero() || !l.Start.Before(since) {
				out = append(out, l.Normalize())
			}
			return nil
		})
	})
	return out, err
}

// Close implements Store.
func (b *Bolt) Close() error { return b.db.Close() }

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}
