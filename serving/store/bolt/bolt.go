package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
	"trending/model"
	"trending/serving/store"

	bbolt "go.etcd.io/bbolt"
)

// Bolt is the embedded serving store: one bbolt file. Each Put is one bbolt transaction, so a
// reader sees the whole previous list or the whole new one.
//
// bbolt locks its file, so only this process writes it: Bolt keeps every key's store.Stamp in
// memory (Versions costs no read) and closes the Changed channel after each write it stores,
// which is how the serving cache of `trending up` learns of a new list at once.
type Store struct {
	db *bbolt.DB

	putMu sync.Mutex // one Put at a time, so stamps change in the order the writes commit

	mu      sync.Mutex             // guards the fields below
	stamps  map[string]store.Stamp // by boltKey
	seq     uint64                 // writes stored by this process
	changed chan struct{}          // closed by the next stored write; nil until someone asks
}

var bucketLists = []byte("lists")

// Open opens (creating) the store file at path.
func Open(path string) (*Store, error) {
	db, err := bbolt.Open(path, 0o644, &bbolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		return nil, fmt.Errorf("open serving store %s: %w (is another trending process using it?)", path, err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketLists)
		return err
	}); err != nil {
		db.Close()
		return nil, fmt.Errorf("init serving store %s: %w", path, err)
	}
	b := &Store{db: db, stamps: map[string]store.Stamp{}}
	if err := b.loadStamps(); err != nil {
		db.Close()
		return nil, fmt.Errorf("read serving store %s: %w", path, err)
	}
	return b, nil
}

// loadStamps reads the stamp of every stored list, decoding only the fields of its key and
// rank.
func (b *Store) loadStamps() error {
	return b.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketLists).ForEach(func(k, v []byte) error {
			var h struct {
				Window, Group, Score string
				Start                time.Time
				Version              int64
				Source               model.Source
			}
			if err := json.Unmarshal(v, &h); err != nil {
				return fmt.Errorf("decode %s: %w", k, err)
			}
			l := model.List{Window: h.Window, Group: h.Group, Score: h.Score, Start: h.Start, Version: h.Version, Source: h.Source}
			b.stamps[string(k)] = store.Stamp{Key: l.Key(), Rank: store.Rank(l)}
			return nil
		})
	})
}

// boltKey sorts calendar lists by start within a window: "cal/hour/2026-11-14T10:00:00Z".
func boltKey(k model.Key) []byte {
	if k.Live() {
		return []byte("live/" + k.Name())
	}
	return []byte("cal/" + k.Name() + "/" + k.Start.UTC().Format(time.RFC3339))
}

// Put implements Store.
func (b *Store) Put(_ context.Context, l model.List) error {
	l.Start, l.End, l.AsOf, l.ComputedAt = utc(l.Start), utc(l.End), utc(l.AsOf), utc(l.ComputedAt)
	key := boltKey(l.Key())
	b.putMu.Lock()
	defer b.putMu.Unlock()
	err := b.db.Update(func(tx *bbolt.Tx) error {
		bk := tx.Bucket(bucketLists)
		var cur *model.List
		if raw := bk.Get(key); raw != nil {
			var c model.List
			if err := json.Unmarshal(raw, &c); err != nil {
				return fmt.Errorf("decode stored %s: %w", l.Key(), err)
			}
			c = c.Normalize()
			cur = &c
		}
		if err := store.Admit(cur, l); err != nil {
			return err
		}
		raw, err := json.Marshal(l)
		if err != nil {
			return err
		}
		return bk.Put(key, raw)
	})
	if err != nil {
		return err
	}
	b.mu.Lock()
	b.seq++
	b.stamps[string(key)] = store.Stamp{Key: l.Key(), Rank: store.Rank(l), Seq: b.seq}
	ch := b.changed
	b.changed = nil
	b.mu.Unlock()
	if ch != nil {
		close(ch)
	}
	return nil
}

// Changed implements store.Notifier.
func (b *Store) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.changed == nil {
		b.changed = make(chan struct{})
	}
	return b.changed
}

// Versions implements store.Versioner from memory.
func (b *Store) Versions(_ context.Context, since time.Time) ([]store.Stamp, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]store.Stamp, 0, len(b.stamps))
	for _, st := range b.stamps {
		if st.Key.Live() || !st.Key.Start.Before(since) {
			out = append(out, st)
		}
	}
	return out, nil
}

// Get implements Store.
func (b *Store) Get(_ context.Context, k model.Key) (model.List, error) {
	var l model.List
	err := b.db.View(func(tx *bbolt.Tx) error {
		raw := tx.Bucket(bucketLists).Get(boltKey(k))
		if raw == nil {
			return fmt.Errorf("%s: %w", k, store.ErrNotFound)
		}
		return json.Unmarshal(raw, &l)
	})
	return l.Normalize(), err
}

// Range implements Store.
func (b *Store) Range(_ context.Context, window string, from, to time.Time) ([]model.List, error) {
	var out []model.List
	lo, hi := boltKey(model.Key{Window: window, Start: from.UTC()}), boltKey(model.Key{Window: window, Start: to.UTC()})
	err := b.db.View(func(tx *bbolt.Tx) error {
		c := tx.Bucket(bucketLists).Cursor()
		for k, v := c.Seek(lo); k != nil && bytes.Compare(k, hi) < 0; k, v = c.Next() {
			var l model.List
			if err := json.Unmarshal(v, &l); err != nil {
				return fmt.Errorf("decode %s: %w", k, err)
			}
			if l = l.Normalize(); l.Key().Name() != window {
				// Another list's key that sorts between the bounds: a group value that
				// starts like a time ("cal/hour/2026-11-14T10/...").
				continue
			}
			out = append(out, l)
		}
		return nil
	})
	return out, err
}

// Since implements Store.
func (b *Store) Since(_ context.Context, since time.Time) ([]model.List, error) {
	var out []model.List
	err := b.db.View(func(tx *bbolt.Tx) error {
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
func (b *Store) Close() error { return b.db.Close() }

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return time.Time{}
	}
	return t.UTC()
}
