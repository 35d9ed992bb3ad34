package batch

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// bucketTopics holds the per-(region, topic) hour rollups, one value per hour.
var bucketTopics = []byte(TopicsRollup)

// encodeTopicCounts writes counts already sorted by (region, topic), so equal rollups are
// equal bytes.
func encodeTopicCounts(cs []TopicCount) []byte {
	buf := binary.AppendUvarint(nil, uint64(len(cs)))
	for _, c := range cs {
		buf = binary.AppendUvarint(buf, uint64(len(c.Region)))
		buf = append(buf, c.Region...)
		buf = binary.AppendUvarint(buf, uint64(len(c.Topic)))
		buf = append(buf, c.Topic...)
		buf = binary.AppendUvarint(buf, c.Tenths)
		buf = binary.AppendUvarint(buf, c.NewTenths)
	}
	return buf
}

func decodeTopicCounts(b []byte) ([]TopicCount, error) {
	bad := errors.New("corrupt topics rollup")
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, bad
	}
	b = b[k:]
	str := func() (string, bool) {
		l, k := binary.Uvarint(b)
		if k <= 0 || uint64(len(b)-k) < l {
			return "", false
		}
		s := string(b[k : k+int(l)])
		b = b[k+int(l):]
		return s, true
	}
	num := func() (uint64, bool) {
		v, k := binary.Uvarint(b)
		if k <= 0 {
			return 0, false
		}
		b = b[k:]
		return v, true
	}
	out := make([]TopicCount, 0, n)
	for range n {
		var c TopicCount
		var ok1, ok2, ok3, ok4 bool
		c.Region, ok1 = str()
		c.Topic, ok2 = str()
		c.Tenths, ok3 = num()
		c.NewTenths, ok4 = num()
		if !ok1 || !ok2 || !ok3 || !ok4 {
			return nil, bad
		}
		out = append(out, c)
	}
	if len(b) != 0 {
		return nil, bad
	}
	return out, nil
}

// BuildTopicHours implements TopicsEngine: each hour is counted by CountTopicHour and all
// of them are written in one bbolt transaction.
func (e *Native) BuildTopicHours(ctx context.Context, src Archive, hours []Built, rules TopicRules) ([]Meta, error) {
	built := make([][]TopicCount, len(hours))
	metas := make([]Meta, len(hours))
	for i, h := range hours {
		cs, rows, err := CountTopicHour(ctx, src, h.Start, rules)
		if err != nil {
			return nil, err
		}
		built[i] = cs
		metas[i] = Meta{Fingerprint: h.Fingerprint, Through: h.Through, InputRows: rows, Items: uint64(len(cs))}
		for _, c := range cs {
			metas[i].Views += c.Tenths
		}
	}
	version := time.Now().UnixMilli()
	err := e.db.Update(func(tx *bolt.Tx) error {
		bk, err := tx.CreateBucketIfNotExists(bucketTopics)
		if err != nil {
			return err
		}
		mb := tx.Bucket(bucketMeta)
		for i, h := range hours {
			metas[i].Version = version
			if len(built[i]) == 0 {
				if err := bk.Delete(startKey(h.Start)); err != nil {
					return err
				}
			} else if err := bk.Put(startKey(h.Start), encodeTopicCounts(built[i])); err != nil {
				return err
			}
			m, err := json.Marshal(metas[i])
			if err != nil {
				return err
			}
			if err := mb.Put(metaKey(TopicsRollup, h.Start), m); err != nil {
				return err
			}
		}
		return nil
	})
	return metas, err
}

// TopicsMeta implements TopicsEngine. Meta.Views is in tenths of a mention.
func (e *Native) TopicsMeta(ctx context.Context, hour time.Time) (Meta, error) {
	return e.Meta(ctx, TopicsRollup, hour)
}

// TopicCounts implements TopicsEngine.
func (e *Native) TopicCounts(_ context.Context, hour time.Time) ([]TopicCount, error) {
	var out []TopicCount
	err := e.db.View(func(tx *bolt.Tx) error {
		bk := tx.Bucket(bucketTopics)
		if bk == nil {
			return nil
		}
		raw := bk.Get(startKey(hour))
		if raw == nil {
			return nil
		}
		var err error
		out, err = decodeTopicCounts(raw)
		if err != nil {
			return fmt.Errorf("topics hour %s: %w", hour.UTC().Format(time.RFC3339), err)
		}
		return nil
	})
	return out, err
}
