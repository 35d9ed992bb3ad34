package worker

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/model"
	"trending/model/salt"
	"trending/model/topk"
	"trending/speed/window"
)

// Salted items in the worker (docs/scale-out.md, "Hot keys"): a message with the salt.Header
// is one share of a salted item; it is counted like any event (under its item_id) and the
// partition tracks the item (window.Partition.Track), so every list it publishes carries the
// item's count in full (model.Partial.Salted) for the merger to sum. The tracked items go
// into the checkpoint beside the window snapshot (the bundle's tracked part), so a restore
// and its replay report exactly what an uninterrupted run would.

// salted reports whether m is a share of a salted item.
func salted(m *kafka.Message) bool {
	for i := range m.Headers {
		if m.Headers[i].Key == salt.Header {
			return true
		}
	}
	return false
}

// saltedCounts converts a list's tracked counts for the wire.
func saltedCounts(es []topk.Entry) []model.SaltedCount {
	if len(es) == 0 {
		return nil
	}
	out := make([]model.SaltedCount, len(es))
	for i, e := range es {
		out[i] = model.SaltedCount{Item: e.Item, Count: e.Count}
	}
	return out
}

// encodeTracked is the bundle's tracked part: uvarint n, then n times (uvarint length, the
// item's bytes, the Unix minute of its last salted event as a signed varint), items strictly
// increasing. nil when there are none.
func encodeTracked(items []window.TrackedItem) []byte {
	if len(items) == 0 {
		return nil
	}
	b := binary.AppendUvarint(nil, uint64(len(items)))
	for _, it := range items {
		b = binary.AppendUvarint(b, uint64(len(it.Item)))
		b = append(b, it.Item...)
		b = binary.AppendVarint(b, it.Last.Unix()/60)
	}
	return b
}

// decodeTracked reads encodeTracked's bytes.
func decodeTracked(b []byte) ([]window.TrackedItem, error) {
	bad := func(format string, args ...any) ([]window.TrackedItem, error) {
		return nil, fmt.Errorf("%w: tracked items: %s", errBundle, fmt.Sprintf(format, args...))
	}
	n, k := binary.Uvarint(b)
	if k <= 0 || n == 0 || n > uint64(len(b)) {
		return bad("count does not fit")
	}
	b = b[k:]
	out := make([]window.TrackedItem, 0, n)
	var prev []byte
	for i := range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || l == 0 || l > uint64(len(b)-k) {
			return bad("item %d: length does not fit", i)
		}
		item := b[k : k+int(l)]
		if i > 0 && bytes.Compare(prev, item) >= 0 {
			return bad("item %d: not in increasing order", i)
		}
		prev, b = item, b[k+int(l):]
		m, k := binary.Varint(b)
		if k <= 0 {
			return bad("item %d: bad minute", i)
		}
		b = b[k:]
		out = append(out, window.TrackedItem{Item: string(item), Last: time.Unix(m*60, 0).UTC()})
	}
	if len(b) != 0 {
		return bad("%d bytes after the items", len(b))
	}
	return out, nil
}
