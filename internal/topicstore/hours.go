package topicstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"trending/internal/objstore"
)

// HoursPrefix is where the hourly topic sketches live in the bucket.
const HoursPrefix = "topics/hours"

// Hours stores each partition's closed hourly topic sketches (speed/topics.State.Unsaved),
// one object per (input topic, partition, hour):
//
//	topics/hours/<topic>/<partition>/<YYYY-MM-DDTHH>Z.cms
//
// The key is a function of what the object holds, never of when or by whom it was written,
// so a rewrite (a retried upload, a partition replayed from an older checkpoint, which counts
// the same events into the same hour) replaces the object instead of adding one, and a
// reader needs no listing: the baseline of 11:00 reads the 7 keys of 11:00 on the previous
// days. Bodies are speed/sketch's checksummed encoding; this package does not decode them.
// Objects older than the baseline depth are removed by Prune. Safe for concurrent use.
type Hours struct {
	st     *objstore.Client
	prefix string
}

// NewHours returns the hourly sketch store under prefix (HoursPrefix when empty) in st.
func NewHours(st *objstore.Client, prefix string) *Hours {
	if prefix == "" {
		prefix = HoursPrefix
	}
	return &Hours{st: st, prefix: strings.TrimSuffix(prefix, "/")}
}

// dir is a partition's folder, ending in "/".
func (h *Hours) dir(topic string, partition int) string {
	return fmt.Sprintf("%s/%s/%d/", h.prefix, topic, partition)
}

// Key is the object of a partition's Unix hour.
func (h *Hours) Key(topic string, partition int, hour int64) string {
	return h.dir(topic, partition) + time.Unix(hour*3600, 0).UTC().Format("2006-01-02T15") + "Z.cms"
}

// Put writes an hour's encoded sketch (one PUT: readers see the old object or the new one).
func (h *Hours) Put(ctx context.Context, topic string, partition int, hour int64, body []byte) error {
	if _, err := h.st.Put(ctx, h.Key(topic, partition, hour), body); err != nil {
		return fmt.Errorf("save topics hour: %w", err)
	}
	return nil
}

// Get reads an hour's encoded sketch. No object is (nil, nil): the partition counted nothing
// that hour, or the deployment is younger; any other failure is an error.
func (h *Hours) Get(ctx context.Context, topic string, partition int, hour int64) ([]byte, error) {
	b, err := h.st.Get(ctx, h.Key(topic, partition, hour))
	switch {
	case errors.Is(err, objstore.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("load topics hour: %w", err)
	}
	return b, nil
}

// Prune removes a partition's hours before the Unix hour before and returns how many.
func (h *Hours) Prune(ctx context.Context, topic string, partition int, before int64) (int, error) {
	dir := h.dir(topic, partition)
	objs, err := h.st.List(ctx, dir)
	if err != nil {
		return 0, fmt.Errorf("prune topics hours: %w", err)
	}
	limit := h.Key(topic, partition, before)
	var old []string
	for _, o := range objs {
		// Keys sort by hour; anything else under the folder is not ours to remove.
		if name := strings.TrimPrefix(o.Key, dir); len(name) == len("2006-01-02T15Z.cms") && strings.HasSuffix(name, "Z.cms") && o.Key < limit {
			old = append(old, o.Key)
		}
	}
	if err := h.st.Delete(ctx, old...); err != nil {
		return 0, fmt.Errorf("prune topics hours: %w", err)
	}
	return len(old), nil
}
