package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"trending/model"
	"trending/model/moderation"
	"trending/serving/store"
)

// Cache holds every served list in memory, pre-encoded, and reloads it from the store in the
// background: a read never touches the store. When the store fails, the cache keeps the lists
// it has, reports the failure (Ready, metrics) and retries on every tick until it recovers.
//
// Two refreshes share the work. The frequent one (RefreshInterval) loads what the speed and
// batch layers are still writing: the live lists (Store.Since), the calendar windows that
// started within HotSpan, and the open and previous month. The full one (FullRefreshInterval)
// loads every retained calendar window, which picks up backfills of old windows without
// reloading a month of hourly lists every five seconds.
//
// Between refreshes, a store that reports stamps (store.Versioner) is asked what changed, so
// a new version is servable in well under RefreshInterval: at once after a store.Notifier
// (the embedded bbolt file) says a write was stored, else every VersionPollInterval
// (ClickHouse, written by other processes). Only the lists whose stamp moved are loaded. The
// refreshes stay, as the backstop and for what the stamps do not cover (the open month,
// backfills of old windows).
//
// Cache is safe for concurrent use: readers load an immutable snapshot through an atomic
// pointer, refreshes build the next one and swap it in. A reader that waits for a list to
// change (a stream) waits on the superseded channel of the entry it holds, or on the
// snapshot's replaced channel while the list does not exist; swap closes them.
type Cache struct {
	cfg Config
	st  store.Store
	log *slog.Logger
	m   *metrics

	snap atomic.Pointer[snapshot]

	refreshMu sync.Mutex               // one refresh at a time; guards stamps
	stamps    map[cacheKey]store.Stamp // what the last look at the store's stamps saw
	mu        sync.Mutex               // guards the health fields below
	lastOK    time.Time                // last successful refresh; zero before the first
	failSince time.Time                // first failure since the last success; zero while healthy
	lastErr   error
}

// snapshot is one immutable generation of the cache.
type snapshot struct {
	lists map[cacheKey]*entry
	// replaced is closed when the next snapshot is swapped in.
	replaced chan struct{}
}

// cacheKey is model.Key made comparable by value: time.Time holds a location pointer.
type cacheKey struct {
	window string
	start  int64 // Unix seconds of the calendar window's start; liveStart for live lists
}

const liveStart = math.MinInt64

func keyOf(window string, start time.Time) cacheKey {
	if start.IsZero() {
		return cacheKey{window, liveStart}
	}
	return cacheKey{window, start.Unix()}
}

// NewCache returns an empty cache over st; call Refresh or Run to fill it.
func NewCache(cfg Config, st store.Store, log *slog.Logger) (*Cache, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &Cache{cfg: cfg, st: st, log: log}
	c.snap.Store(&snapshot{lists: map[cacheKey]*entry{}, replaced: make(chan struct{})})
	c.m = newMetrics(c)
	if cfg.Registerer != nil {
		if err := c.m.register(cfg.Registerer); err != nil {
			return nil, fmt.Errorf("register serving metrics: %w", err)
		}
	}
	return c, nil
}

// Get returns the cached list under (window, start); start zero is the live list.
func (c *Cache) Get(window string, start time.Time) (*entry, bool) {
	e, ok := c.snap.Load().lists[keyOf(window, start)]
	return e, ok
}

// Loaded reports whether any refresh has succeeded.
func (c *Cache) Loaded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return !c.lastOK.IsZero()
}

// Ready returns nil when the cache is loaded and either the store is reachable or the newest
// successful load is younger than ServeStaleFor; otherwise an error wrapping ErrNotLoaded or
// ErrStoreDown that says why. A store that is down but was loaded recently enough is not a
// readiness failure (StoreHealth says it is down): the lists held are served.
func (c *Cache) Ready() error {
	now := c.cfg.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.lastOK.IsZero() && c.lastErr != nil:
		return fmt.Errorf("%w: %v", ErrNotLoaded, c.lastErr)
	case c.lastOK.IsZero():
		return ErrNotLoaded
	case !c.failSince.IsZero() && now.Sub(c.lastOK) >= c.cfg.ServeStaleFor:
		return fmt.Errorf("%w for %s (since %s): %v; the lists served were last loaded at %s, more than %s ago",
			ErrStoreDown, now.Sub(c.failSince).Round(time.Second), c.failSince.UTC().Format(time.RFC3339),
			c.lastErr, c.lastOK.UTC().Format(time.RFC3339), c.cfg.ServeStaleFor)
	}
	return nil
}

// StoreHealth is what the cache's refreshes last saw of the store.
type StoreHealth struct {
	Up           bool      // the last refresh succeeded
	LastOK       time.Time // the last successful refresh; zero before the first
	FailingSince time.Time // the first failed refresh since the last success; zero while Up
	Err          error     // the last refresh's error while not Up
}

// StoreHealth reports whether the store answered the last refresh, and since when it fails.
func (c *Cache) StoreHealth() StoreHealth {
	c.mu.Lock()
	defer c.mu.Unlock()
	return StoreHealth{Up: !c.lastOK.IsZero() && c.failSince.IsZero(), LastOK: c.lastOK, FailingSince: c.failSince, Err: c.lastErr}
}

// LastRefresh returns the time of the last successful refresh (zero before the first).
func (c *Cache) LastRefresh() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastOK
}

// Run refreshes the cache until ctx ends: fully at once and every FullRefreshInterval, the hot
// part every RefreshInterval, and the lists whose stamp moved whenever the store says it
// stored a write or, if it cannot say, every VersionPollInterval. A failed full refresh is
// retried on the next tick. It returns nil when ctx ends.
func (c *Cache) Run(ctx context.Context) error {
	vs, versions := c.st.(store.Versioner)
	n, notifies := c.st.(store.Notifier)
	var changed <-chan struct{}
	var poll <-chan time.Time
	switch {
	case versions && notifies:
		changed = n.Changed() // before the first load, so no write after it goes unnoticed
	case versions:
		pt := time.NewTicker(c.cfg.VersionPollInterval)
		defer pt.Stop()
		poll = pt.C
	}
	applied := c.removed()
	needFull := c.Refresh(ctx, true) != nil
	lastFull := c.cfg.Now()
	t := time.NewTicker(c.cfg.RefreshInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			changed = n.Changed()
			c.refreshChanged(ctx, vs)
			continue
		case <-poll:
			c.refreshChanged(ctx, vs)
			continue
		case <-t.C:
		}
		// A change of the removed items reloads every list, so each is filtered by the new set
		// (a restored item comes back in the lists that hold it).
		rm := c.removed()
		moderated := !rm.Equal(applied)
		full := needFull || moderated || c.cfg.Now().Sub(lastFull) >= c.cfg.FullRefreshInterval
		err := c.Refresh(ctx, full)
		if full && err == nil {
			lastFull, applied = c.cfg.Now(), rm
		}
		needFull = full && err != nil
	}
}

// Refresh loads lists from the store and swaps in a new snapshot: every retained list when
// full, else the hot part. On failure the current snapshot stays.
func (c *Cache) Refresh(ctx context.Context, full bool) error {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	kind := "hot"
	if full {
		kind = "full"
	}
	start := time.Now()
	now := c.cfg.Now()
	lists, err := c.load(ctx, now, full)
	c.m.refreshDuration.WithLabelValues(kind).Observe(time.Since(start).Seconds())
	c.m.refreshes.WithLabelValues(kind).Inc()
	if err != nil {
		c.m.refreshFailures.WithLabelValues(kind).Inc()
		c.mu.Lock()
		if c.failSince.IsZero() {
			c.failSince = now
		}
		c.lastErr = err
		c.mu.Unlock()
		c.log.Warn("serving cache refresh failed; serving the last lists", "kind", kind, "err", err)
		return fmt.Errorf("refresh serving cache (%s): %w", kind, err)
	}
	c.swap(now, lists)
	c.mu.Lock()
	if !c.failSince.IsZero() {
		c.log.Info("serving store reachable again", "down_for", now.Sub(c.failSince).Round(time.Millisecond))
	}
	c.lastOK, c.failSince, c.lastErr = now, time.Time{}, nil
	c.mu.Unlock()
	return nil
}

// refreshChanged loads the lists whose stamp moved since the last look and swaps them in. A
// key seen for the first time is loaded unless the cache holds its rank already (as after the
// first full refresh). A failure is counted and logged at debug level; the next look or
// refresh retries, and only the refreshes judge the store's health.
func (c *Cache) refreshChanged(ctx context.Context, vs store.Versioner) error {
	c.refreshMu.Lock()
	defer c.refreshMu.Unlock()
	const kind = "changes"
	start := time.Now()
	now := c.cfg.Now()
	stamps, err := vs.Versions(ctx, now.Add(-c.cfg.HotSpan))
	defer func() {
		c.m.refreshDuration.WithLabelValues(kind).Observe(time.Since(start).Seconds())
		c.m.refreshes.WithLabelValues(kind).Inc()
		if err != nil {
			c.m.refreshFailures.WithLabelValues(kind).Inc()
			c.log.Debug("serving cache: loading changed lists failed; the next look retries", "err", err)
		}
	}()
	if err != nil {
		return err
	}
	cur := c.snap.Load().lists
	seen := make(map[cacheKey]store.Stamp, len(stamps))
	var lists []model.List
	for _, st := range stamps {
		k := keyOf(st.Key.Name(), st.Key.Start)
		prev, known := c.stamps[k]
		e, held := cur[k]
		if known && prev == st || !known && held && store.Rank(e.list) == st.Rank {
			seen[k] = st
			continue
		}
		l, gerr := c.st.Get(ctx, st.Key)
		if gerr != nil {
			if !errors.Is(gerr, store.ErrNotFound) && err == nil {
				err = fmt.Errorf("get %s: %w", st.Key, gerr)
			}
			continue // unseen: the next look tries it again
		}
		lists = append(lists, l)
		seen[k] = st
	}
	c.stamps = seen
	if len(lists) > 0 {
		c.swap(now, lists)
	}
	return err
}

// load reads the lists one refresh needs from the store.
func (c *Cache) load(ctx context.Context, now time.Time, full bool) ([]model.List, error) {
	var out []model.List
	get := func(k model.Key) error {
		l, err := c.st.Get(ctx, k)
		if errors.Is(err, store.ErrNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("get %s: %w", k, err)
		}
		out = append(out, l)
		return nil
	}
	if !full {
		ls, err := c.st.Since(ctx, now.Add(-c.cfg.HotSpan))
		if err != nil {
			return nil, fmt.Errorf("lists since %s: %w", now.Add(-c.cfg.HotSpan).UTC().Format(time.RFC3339), err)
		}
		out = append(out, ls...)
		// Weeks and months start before the hot span: their open and previous windows (of
		// every configured group value too; with every value seen, the full refreshes load
		// the groups' older windows).
		for _, span := range []model.Period{model.Week, model.Month} {
			if !c.cfg.Windows.HasCalendar(span) {
				continue
			}
			open := span.Align(now)
			for _, s := range []time.Time{open, span.Back(open, 1)} {
				for _, g := range c.groupValues() {
					if err := get(model.Key{Window: string(span), Start: s, Group: g}); err != nil {
						return nil, err
					}
				}
			}
		}
		return out, nil
	}
	for _, w := range c.cfg.Windows.Live() {
		for _, g := range c.groupValues() {
			if err := get(model.Key{Window: w, Group: g}); err != nil {
				return nil, err
			}
		}
	}
	for _, r := range c.cfg.topicsRegions() {
		k := model.TopicsKey(r, c.cfg.Topics[r])
		w := k.Name()
		if err := get(k); err != nil {
			return nil, err
		}
		// The batch's exact lists of closed hours, kept as long as calendar hours.
		ls, err := c.st.Range(ctx, w, c.oldest(model.Hour, now), model.Hour.Next(model.Hour.Align(now)))
		if err != nil {
			return nil, fmt.Errorf("range %s hours: %w", w, err)
		}
		out = append(out, ls...)
	}
	for _, w := range c.cfg.Windows.Calendar() {
		from := c.oldest(w, now)
		// Two windows past the open one, in case a writer's clock runs ahead of ours.
		to := w.Next(w.Next(w.Align(now)))
		for _, g := range c.groupValues() {
			name := model.Key{Window: string(w), Group: g}.Name()
			ls, err := c.st.Range(ctx, name, from, to)
			if err != nil {
				return nil, fmt.Errorf("range %s windows from %s: %w", name, from.Format(time.RFC3339), err)
			}
			out = append(out, ls...)
		}
	}
	if g := c.cfg.Windows.Groups; g.On() && g.Every {
		// Every value seen gets lists: which values have them only the store knows. Every
		// list since the oldest retained calendar window (the swap keeps what the
		// retention and the configuration allow).
		since := now
		for _, w := range c.cfg.Windows.Calendar() {
			if o := c.oldest(w, now); o.Before(since) {
				since = o
			}
		}
		ls, err := c.st.Since(ctx, since)
		if err != nil {
			return nil, fmt.Errorf("lists since %s: %w", since.UTC().Format(time.RFC3339), err)
		}
		for _, l := range ls {
			if l.Group != "" && !l.Key().IsTopics() {
				out = append(out, l)
			}
		}
	}
	return out, nil
}

// groupValues are the group values a full refresh loads by name: "" (the lists of all items)
// and each configured value (with every value seen, none by name: load finds them).
func (c *Cache) groupValues() []string {
	g := c.cfg.Windows.Groups
	if !g.On() || g.Every {
		return []string{""}
	}
	return append([]string{""}, g.Values...)
}

// oldest returns the start of the oldest retained calendar window of a kind.
func (c *Cache) oldest(p model.Period, now time.Time) time.Time {
	return p.Back(p.Align(now), c.cfg.retain(p)-1)
}

// swap builds the next snapshot from the current one and the loaded lists. An entry whose list
// did not change is kept with the bodies it has already rendered; windows past retention are
// dropped; a list older than the cached one (a lagging replica) never replaces it. When
// nothing changed the current snapshot stays. After the swap the superseded channels of the
// replaced and dropped entries are closed, then the old snapshot's replaced channel, so a
// woken stream finds the new version.
//
// Each new version of a live list, once the cache has loaded before, is observed in
// trending_served_freshness_seconds: how old its as_of is when it becomes servable.
func (c *Cache) swap(now time.Time, lists []model.List) {
	old := c.snap.Load()
	cur := old.lists
	oldest := map[model.Period]int64{}
	for _, w := range c.cfg.Windows.Calendar() {
		oldest[w] = c.oldest(w, now).Unix()
	}
	oldest[model.Hour] = c.oldest(model.Hour, now).Unix() // topics lists keep calendar hours
	next := make(map[cacheKey]*entry, len(cur)+len(lists))
	var gone []*entry // replaced or dropped: their superseded channels close after the swap
	for k, e := range cur {
		retention := model.Period(e.list.Window) // a list per region keeps its window's calendar lists
		if e.list.Key().IsTopics() {
			retention = model.Hour
		}
		if k.start == liveStart || k.start >= oldest[retention] {
			next[k] = e
		} else {
			gone = append(gone, e)
		}
	}
	var fresh []*entry // new versions of live lists
	rm := c.removed()
	for _, l := range lists {
		l, moderated := withoutRemoved(l, rm)
		if !c.cfg.Windows.AcceptsKey(l.Key()) {
			continue // a window this deployment does not serve
		}
		k := keyOf(l.Key().Name(), l.Start)
		if k.start != liveStart {
			retention := model.Period(l.Window)
			if l.Key().IsTopics() {
				retention = model.Hour // the batch's exact topics lists of closed hours
			}
			if o, ok := oldest[retention]; !ok || k.start < o {
				continue
			}
		}
		was, ok := next[k]
		tag := listTag(trimmed(l, c.cfg.MaxLimit))
		if moderated != "" {
			// The same stored version without some items: another body, another tag.
			tag += "m" + moderated
		}
		if ok && was.tag == tag {
			continue
		}
		var prev *model.List
		if ok {
			prev = &was.list
		}
		if err := store.Admit(prev, l); err != nil {
			if errors.Is(err, store.ErrInvalid) {
				c.m.invalidLists.Inc()
				c.log.Warn("serving store holds an invalid list; not serving it", "key", l.Key().String(), "err", err)
			}
			continue
		}
		e := newEntry(l, c.cfg.MaxLimit)
		e.tag = tag
		next[k] = e
		if ok {
			gone = append(gone, was)
		}
		if k.start == liveStart {
			fresh = append(fresh, e)
		}
	}
	if len(gone) == 0 && len(next) == len(cur) {
		return // nothing new: readers keep the snapshot they have
	}
	observe := c.Loaded()
	c.snap.Store(&snapshot{lists: next, replaced: make(chan struct{})})
	servable := c.cfg.Now()
	if observe { // before the streams wake, so whoever sees the version sees it counted
		for _, e := range fresh {
			c.m.freshness.WithLabelValues(e.list.Key().Name()).Observe(max(0, servable.Sub(e.list.AsOf).Seconds()))
		}
	}
	for _, e := range gone {
		close(e.superseded)
	}
	close(old.replaced)
}

func trimmed(l model.List, n int) model.List {
	if len(l.Items) > n {
		l.Items = l.Items[:n]
	}
	return l
}

// removed is the set Config.Removed returns now (nil: nothing removed).
func (c *Cache) removed() *moderation.Set {
	if c.cfg.Removed == nil {
		return nil
	}
	return c.cfg.Removed()
}

// withoutRemoved returns l without the items of rm, the others ranked again, and rm's
// digest when it dropped any ("" when l is unchanged); a topics list is left alone (its
// topics are moderated by the review queue). l's items are not changed.
func withoutRemoved(l model.List, rm *moderation.Set) (model.List, string) {
	if rm.Len() == 0 || l.Key().IsTopics() {
		return l, ""
	}
	items := moderation.Top(l.Items, rm, len(l.Items), func(it model.Item) string { return it.ItemID })
	if len(items) == len(l.Items) {
		return l, ""
	}
	for i := range items {
		items[i].Rank = i + 1
	}
	l.Items = items
	return l, rm.Digest()
}
