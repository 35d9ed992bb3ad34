package worker

import (
	"context"
	"errors"
	"sync"
	"time"

	"trending/model"
)

// baseCache holds the batch layer's all-time base as the partitions need it: its boundary,
// version and item ids, read through Config.Base at most every BaseRefresh.
type baseCache struct {
	mu   sync.Mutex
	at   time.Time
	base *baseInfo
}

type baseInfo struct {
	boundary time.Time
	version  int64
	items    []string
}

// refresh reads the base again when it is due. A failed read keeps the base held.
func (b *baseCache) refresh(ctx context.Context, c Config, now time.Time) {
	if c.Base == nil || c.Window.SinceDays == 0 {
		return
	}
	b.mu.Lock()
	due := b.at.IsZero() || now.Sub(b.at) >= c.BaseRefresh
	if due {
		b.at = now
	}
	b.mu.Unlock()
	if !due {
		return
	}
	l, err := c.Base(ctx)
	switch {
	case errors.Is(err, model.ErrNotFound):
		return
	case err != nil:
		c.Log.Warn("reading the all-time base failed; keeping the one held", "err", err)
		return
	}
	info := &baseInfo{boundary: l.Boundary, version: l.Version, items: make([]string, len(l.Items))}
	for i, it := range l.Items {
		info.items[i] = it.ItemID
	}
	b.mu.Lock()
	if b.base == nil || info.version > b.base.version {
		b.base = info
	}
	b.mu.Unlock()
}

func (b *baseCache) get() *baseInfo {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.base
}

// sincePartial moves the partition's boundary to the base's and returns its counts since it
// as a model.SinceWindow partial; ok is false without a base or counts since a boundary.
// Moving the boundary drops whole days of state by the wall clock's news of a batch run, so,
// like AdvanceTo, it is not repeated by a replay: the snapshot keeps the boundary.
func (p *partition) sincePartial() (model.Partial, bool) {
	b := p.w.base.get()
	if b == nil || !p.state.SinceEnabled() {
		return model.Partial{}, false
	}
	if err := p.state.SetBoundary(b.boundary); err != nil {
		p.w.cfg.Log.Warn("the all-time base's boundary is unusable", "boundary", b.boundary, "err", err)
		return model.Partial{}, false
	}
	sl, ok := p.state.Since(b.items)
	if !ok || sl.AsOf.IsZero() || sl.AsOf.UnixMilli() <= 0 {
		return model.Partial{}, false
	}
	// The counts reach the last closed minute (AsOf), which trails the newest event read by
	// the lateness and up to a minute more; the version is that newest event time, as the
	// partition's live lists' versions are, so the merger compares like with like when it
	// decides whether the counts since B still keep up with the running all-time list (a
	// merger with a short staleness, up's 3 s, otherwise never took the hybrid).
	version := max(p.state.Watermark().Add(p.state.Config().AllowedLateness).UnixMilli(), sl.AsOf.UnixMilli())
	return model.Partial{Kind: model.PartialSince, Window: model.SinceWindow, Partition: p.id, AsOf: sl.AsOf, Version: version, Exact: true,
		Total: sl.Total, Items: sl.Items, Boundary: sl.Boundary, From: sl.From, BaseVersion: b.version, Base: sl.Base, Cutoff: sl.Cutoff,
		Salted: saltedCounts(sl.Tracked)}, true
}
