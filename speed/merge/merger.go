package merge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/setting"
	"trending/model"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/serving/store"
)

// Default settings.
const (
	// DefaultStaleness is Config.Staleness's default.
	DefaultStaleness = 3 * time.Minute
	// DefaultTopic is RunConfig.Topic's default.
	DefaultTopic = "trending.partials"
)

// Config configures a Merger. Start from DefaultConfig, which holds every default: a zero
// field means zero (see each field), and New refuses a zero K, Staleness or Retention by the
// field's name. A nil Titles is NoTitles, a nil Log discards, a nil Registry keeps no
// metrics.
type Config struct {
	// K is the length of a served list, 1..1000; default 100.
	K int
	// Partitions is how many partitions the views topic has: a partition with no list at all
	// counts as stale. 0 means "whatever partitions have reported".
	Partitions int
	// Staleness: a partition whose newest list is older than the newest partition's by more
	// than this is stale (its last list is reused, the result marked partial). Positive;
	// default 3m.
	Staleness time.Duration
	// Retention: calendar windows that ended longer ago than this are forgotten. Positive;
	// default 48h.
	Retention time.Duration
	// Titles attaches display titles; default none (NoTitles).
	Titles Titles
	// Store is where the merged lists go. Required.
	Store store.Store
	Log   *slog.Logger
	// Registry receives the merger's metrics; nil means none.
	Registry prometheus.Registerer
	// BaseRefresh is how often the batch layer's all-time base (model.BaseWindow) is re-read
	// from the store for the live "all" list; default 30s, 0 re-reads it at every Publish.
	// Negative is refused.
	BaseRefresh time.Duration
	// Windows is the served window set (model/windowset): partials of any other window (a
	// worker started with another set) are dropped, counted in
	// trending_merge_partials_unconfigured_total and logged once per window, so the store
	// gets exactly the configured lists. Default windowset.Default().
	Windows windowset.Set
}

// DefaultConfig returns the documented defaults, without the Store New requires. It is the
// one place the defaults live.
func DefaultConfig() Config {
	return Config{K: 100, Staleness: DefaultStaleness, Retention: 48 * time.Hour, BaseRefresh: 30 * time.Second, Windows: windowset.Default()}
}

// Validate reports every setting that cannot work, each an error wrapping setting.ErrConfig
// that names its field.
func (c Config) Validate() error {
	d := DefaultConfig()
	var errs []error
	if c.Store == nil {
		errs = append(errs, setting.Invalid("Store", "no serving store"))
	}
	if c.K < 1 || c.K > 1000 {
		errs = append(errs, setting.Invalid("K", "%d: must be 1..1000 (default %d)", c.K, d.K))
	}
	if c.Partitions < 0 {
		errs = append(errs, setting.Invalid("Partitions", "%d: must be at least 0 (0: whatever partitions report)", c.Partitions))
	}
	if c.Staleness <= 0 {
		errs = append(errs, setting.Invalid("Staleness", "%s: must be positive (default %s)", c.Staleness, d.Staleness))
	}
	if c.Retention <= 0 {
		errs = append(errs, setting.Invalid("Retention", "%s: must be positive (default %s)", c.Retention, d.Retention))
	}
	if err := c.Windows.Validate(); err != nil {
		errs = append(errs, setting.Invalid("Windows", "%v", err))
	}
	if c.BaseRefresh < 0 {
		errs = append(errs, setting.Invalid("BaseRefresh", "%s: must not be negative (0: at every publish; default %s)", c.BaseRefresh, d.BaseRefresh))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	return nil
}

// Merger merges partials into served lists. Offer and Publish are safe for concurrent use.
type Merger struct {
	cfg Config

	mu      sync.Mutex
	lists   map[model.Key]map[int]model.Partial // newest list of each partition, per served list
	dirty   map[model.Key]bool
	titles  map[string]Meta // every item's metadata seen, reused when the source fails
	metrics metrics

	// The batch layer's all-time base, newest and the one before (which serves while the
	// partitions move to the newer boundary), and when it was last read.
	base, prevBase *model.List
	baseAt         time.Time

	// Which partitions sent a newer list since the last Publish, and when each last sent
	// one (wall clock): Run publishes as soon as every partition heard from within Staleness
	// is fresh. arrived has a token after any newer list.
	fresh   map[int]bool
	heard   map[int]time.Time
	arrived chan struct{}

	unconfigured map[string]bool // windows whose partials were dropped, logged once each

	// full says, per partition, whether its newest list of all items said GroupsFull: it
	// keeps no lists for some group value it saw, so a group list it sends nothing for may
	// miss its counts.
	full map[int]bool
}

type metrics struct {
	offered, published, refused, titleFailures, unconfigured prometheus.Counter
	stale                                                    *prometheus.GaugeVec
}

// New builds a Merger, or returns the settings that cannot work (Validate).
func New(cfg Config) (*Merger, error) {
	if cfg.Titles == nil {
		cfg.Titles = NoTitles{}
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Merger{cfg: cfg, lists: map[model.Key]map[int]model.Partial{}, dirty: map[model.Key]bool{}, titles: map[string]Meta{},
		fresh: map[int]bool{}, heard: map[int]time.Time{}, arrived: make(chan struct{}, 1), unconfigured: map[string]bool{}, full: map[int]bool{}}
	m.metrics = metrics{
		offered:       prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_merge_partials_total", Help: "model.Partial lists received from speed workers."}),
		published:     prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_merge_lists_published_total", Help: "Merged lists written to the serving store."}),
		refused:       prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_merge_writes_refused_total", Help: "Writes the serving store refused as stale or superseded."}),
		unconfigured:  prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_merge_partials_unconfigured_total", Help: "Partials dropped because their window is not in the configured window set."}),
		titleFailures: prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_merge_title_failures_total", Help: "Title lookups that failed (previous titles reused)."}),
		stale:         prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "trending_merge_stale_partitions", Help: "Partitions whose list was stale or missing in the last merge, by window."}, []string{"window"}),
	}
	if cfg.Registry != nil {
		for _, c := range []prometheus.Collector{m.metrics.offered, m.metrics.published, m.metrics.refused, m.metrics.titleFailures, m.metrics.unconfigured, m.metrics.stale} {
			if err := cfg.Registry.Register(c); err != nil {
				return nil, fmt.Errorf("merge metrics: %w", err)
			}
		}
	}
	return m, nil
}

// Offer takes a partial; an older version than the one held for its (window, partition) is
// ignored, so replays and a second worker's late copy do no harm.
func (m *Merger) Offer(p model.Partial) {
	m.metrics.offered.Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	k := p.Key()
	if !m.configured(p) {
		m.metrics.unconfigured.Inc()
		if !m.unconfigured[k.Name()] {
			m.unconfigured[k.Name()] = true
			m.cfg.Log.Warn("dropping partials of a window that is not configured here: give speed and merge the same --window-set/--window-preset",
				"window", k.Name(), "calendar", !k.Live(), "served", m.cfg.Windows.Describe())
		}
		return
	}
	byPart := m.lists[k]
	if byPart == nil {
		byPart = map[int]model.Partial{}
		m.lists[k] = byPart
	}
	cur, ok := byPart[p.Partition]
	if p.LateOnly {
		// A late-drop count amends the partition's list; alone (the partition never counted
		// anything in the window) it is a placeholder without items.
		if ok {
			if p.DroppedLate > cur.DroppedLate {
				cur.DroppedLate = p.DroppedLate
				byPart[p.Partition] = cur
				m.dirty[k] = true
			}
			return
		}
		byPart[p.Partition] = p
		m.dirty[k] = true
		return
	}
	if ok && (cur.Version > p.Version || (cur.Version == p.Version && cur.Final && !p.Final && !cur.LateOnly)) {
		return
	}
	if ok {
		// Counts only grow: a replayed or re-sent list must not lower one already seen.
		p.DroppedLate = max(p.DroppedLate, cur.DroppedLate)
	}
	byPart[p.Partition] = p
	if k.Group == "" && !k.IsTopics() && (!ok || p.Version > cur.Version) {
		m.full[p.Partition] = p.GroupsFull
	}
	if p.Window == model.SinceWindow {
		k = allKey
	}
	m.dirty[k] = true
	if !ok || p.Version > cur.Version {
		m.fresh[p.Partition], m.heard[p.Partition] = true, time.Now()
		select {
		case m.arrived <- struct{}{}:
		default:
		}
	}
}

// configured reports whether p feeds a list of the configured set (the counts since the
// all-time boundary feed "all").
func (m *Merger) configured(p model.Partial) bool {
	if p.Window == model.SinceWindow {
		return m.cfg.Windows.HasLive(windowset.AllName)
	}
	k := p.Key()
	if w, ok := m.cfg.Windows.Lookup(k.Window, false); ok && k.Live() && !k.IsTopics() {
		// A decayed window's partials must carry its half-life, and only its partials any.
		if hl := int64(w.HalfLife / time.Second); (w.Kind == windowset.Decayed) != (p.HalfLifeSeconds != 0) || (p.HalfLifeSeconds != 0 && p.HalfLifeSeconds != hl) {
			return false
		}
	}
	return m.cfg.Windows.AcceptsKey(k)
}

// allFresh reports whether every partition heard from within Staleness has sent a newer
// list since the last Publish: a merge now would miss no news.
func (m *Merger) allFresh(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.fresh) == 0 {
		return false
	}
	for part, at := range m.heard {
		if !m.fresh[part] && now.Sub(at) <= m.cfg.Staleness {
			return false
		}
	}
	return true
}

// allKey is the live all-time list.
var allKey = model.Key{Window: "all"}

// Build merges the newest partials of one served list. ok is false when no partition has
// reported it.
func (m *Merger) Build(k model.Key) (l model.List, stale []int, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.build(k)
}

func (m *Merger) build(k model.Key) (model.List, []int, bool) {
	if k == allKey {
		// The hybrid, unless the workers stopped sending their counts since B while their
		// own all-time lists move on.
		var own int64
		for _, p := range m.lists[allKey] {
			own = max(own, p.Version)
		}
		for _, base := range []*model.List{m.base, m.prevBase} {
			if l, stale, ok := m.buildHybrid(base); ok && l.Version >= own-m.cfg.Staleness.Milliseconds() {
				return l, stale, true
			}
		}
	}
	byPart := m.lists[k]
	if len(byPart) == 0 {
		return model.List{}, nil, false
	}
	var newest int64
	for _, p := range byPart {
		newest = max(newest, p.Version)
	}
	cutoff := newest - m.cfg.Staleness.Milliseconds()
	// The speed layer's counts are never claimed exact: events later than the allowed
	// lateness are missing from them (and sketch counts are estimates). A calendar window is
	// provisional once every partition has sent its final list, live before.
	l := model.List{Source: model.SourceSpeed, Status: model.StatusLive, Version: newest, AsOf: time.UnixMilli(newest).UTC()}
	l.SetKey(k)
	final, items := !k.Live(), false
	var stale []int
	lists := make([][]topk.Entry, 0, len(byPart))
	var bound *model.Bound
	parts := make([]int, 0, len(byPart))
	for part := range byPart {
		parts = append(parts, part)
	}
	sort.Ints(parts)
	for _, part := range parts {
		p := byPart[part]
		if p.Version < cutoff {
			stale = append(stale, part)
		}
		if !p.End.IsZero() {
			l.End = p.End
		}
		if p.Version == newest && !p.WindowStart.IsZero() {
			// The span of the newest partition's list, which as_of names; a partition behind
			// it within the staleness counts a span that ends a little earlier.
			l.WindowStart = p.WindowStart
		}
		final = final && p.Final
		items = items || !p.LateOnly
		if !k.Live() {
			l.DroppedLate += p.DroppedLate
		}
		if !p.Exact {
			if p.Bound != nil {
				if bound == nil {
					bound = &model.Bound{MaxOvercount: p.Bound.MaxOvercount, Probability: p.Bound.Probability}
				} else {
					// Each item's count comes from one partition: the worst partition's bound holds for all.
					bound.MaxOvercount = math.Max(bound.MaxOvercount, p.Bound.MaxOvercount)
					bound.Probability = math.Min(bound.Probability, p.Bound.Probability)
				}
			}
		}
		lists = append(lists, p.Items)
	}
	if k.Group != "" && !k.IsTopics() {
		stale = append(stale, m.missingFromGroup(k, byPart, cutoff)...)
	} else {
		for part := 0; part < m.cfg.Partitions; part++ {
			if _, ok := byPart[part]; !ok {
				stale = append(stale, part)
			}
		}
	}
	if !items {
		return model.List{}, nil, false // only late-drop counts: no partition's list to amend yet
	}
	if final {
		l.Status = model.StatusProvisional
	}
	sort.Ints(stale)
	if len(stale) > 0 {
		l.Partial, l.StalePartitions = true, stale
	}
	l.ErrorBound = bound
	if !l.WindowStart.IsZero() {
		l.WindowEnd = l.AsOf
	}
	if k.IsTopics() {
		l.Items = mergeTopics(m.cfg.K, byPart, parts)
		return l, stale, true
	}
	if hl := decayedHalfLife(byPart, newest); hl != 0 {
		l.HalfLifeSeconds = hl
		l.Items = mergeDecayed(m.cfg.K, byPart, parts, l.AsOf, hl)
		return l, stale, true
	}
	merged := topk.Merge(m.cfg.K, lists...)
	l.Items = make([]model.Item, len(merged))
	for i, e := range merged {
		l.Items[i] = model.Item{Rank: i + 1, ItemID: e.Item, Views: e.Count}
	}
	return l, stale, true
}

// missingFromGroup returns the partitions that sent no list for group key k although their
// counts of it may be missing: a partition that never saw the value sends none and is not
// missing, but one whose list of all items for the same window is missing or stale (behind
// cutoff) is, and so is one that ran out of group values (GroupsFull: it may have dropped the
// value's events).
func (m *Merger) missingFromGroup(k model.Key, byPart map[int]model.Partial, cutoff int64) []int {
	all := m.lists[model.Key{Window: k.Window, Start: k.Start}]
	var out []int
	consider := func(part int) {
		if _, ok := byPart[part]; ok || slices.Contains(out, part) {
			return
		}
		p, ok := all[part]
		if !ok || p.Version < cutoff || m.full[part] {
			out = append(out, part)
		}
	}
	for part := 0; part < m.cfg.Partitions; part++ {
		consider(part)
	}
	for part := range all {
		consider(part)
	}
	for part := range m.full {
		consider(part)
	}
	return out
}

// decayedHalfLife is the half-life of a decayed window's partials (that of the newest), or 0
// for a list of counts.
func decayedHalfLife(byPart map[int]model.Partial, newest int64) int64 {
	for _, p := range byPart {
		if p.Version == newest {
			return p.HalfLifeSeconds
		}
	}
	return 0
}

// mergeDecayed joins the partitions' decayed lists as of asOf: each partition's scores are
// as of its own AsOf, so they are first decayed to asOf (multiplied by 2^(-dt/half-life):
// what a score becomes with no new views, which is all the merger knows of a partition that
// is behind), then ranked best first, at most k. Items are partitioned, so the merge is
// exact. A partial of another half-life (a worker with another window set) is left out.
func mergeDecayed(k int, byPart map[int]model.Partial, parts []int, asOf time.Time, hl int64) []model.Item {
	lists := make([][]topk.Scored, 0, len(parts))
	for _, part := range parts {
		p := byPart[part]
		if p.HalfLifeSeconds != hl {
			continue
		}
		f := math.Exp2(-float64(asOf.Sub(p.AsOf).Milliseconds()) / float64(hl*1000))
		l := make([]topk.Scored, 0, len(p.Scored))
		for _, e := range p.Scored {
			if s := e.Score * f; s > 0 && !math.IsInf(s, 1) {
				l = append(l, topk.Scored{Item: e.Item, Score: s})
			}
		}
		lists = append(lists, l)
	}
	merged := topk.MergeScored(k, lists...)
	items := make([]model.Item, len(merged))
	for i, e := range merged {
		items[i] = model.Item{Rank: i + 1, ItemID: e.Item, Views: model.DecayedViews(e.Score), DecayedScore: e.Score}
	}
	return items
}

// mergeTopics joins the partitions' topics lists: best score first (ties by topic), at most
// k, or the smallest Limit a partition asked for.
func mergeTopics(k int, byPart map[int]model.Partial, parts []int) []model.Item {
	var all []model.Item
	for _, part := range parts {
		p := byPart[part]
		if p.Limit > 0 {
			k = min(k, p.Limit)
		}
		all = append(all, p.Topics...)
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].Score != all[j].Score {
			return all[i].Score > all[j].Score
		}
		return all[i].ItemID < all[j].ItemID
	})
	if len(all) > k {
		all = all[:k]
	}
	for i := range all {
		all[i].Rank, all[i].Exact = i+1, false
	}
	return all
}

// Publish merges every list that changed since the last call, attaches titles and writes it.
// Store refusals (a newer list is already there) are counted and logged, not returned.
func (m *Merger) Publish(ctx context.Context, now time.Time) error {
	m.refreshBase(ctx, now)
	m.mu.Lock()
	clear(m.fresh)
	var out []model.List
	for k := range m.dirty {
		l, stale, ok := m.build(k)
		delete(m.dirty, k)
		if !ok {
			continue
		}
		if k.Live() && k.Group == "" {
			m.metrics.stale.WithLabelValues(k.Window).Set(float64(len(stale)))
		}
		out = append(out, l)
	}
	// Forget calendar windows long closed.
	for k, byPart := range m.lists {
		for _, p := range byPart {
			if !p.End.IsZero() && now.Sub(p.End) > m.cfg.Retention {
				delete(m.lists, k)
			}
			break
		}
	}
	m.mu.Unlock()

	sort.Slice(out, func(i, j int) bool { return out[i].Key().String() < out[j].Key().String() })
	for i := range out {
		m.attachTitles(ctx, &out[i])
		out[i].ComputedAt = now.UTC()
		err := m.cfg.Store.Put(ctx, out[i])
		switch {
		case errors.Is(err, store.ErrStaleVersion) || errors.Is(err, store.ErrSuperseded):
			m.metrics.refused.Inc()
			m.cfg.Log.Debug("serving store kept its newer list", "list", out[i].Key(), "err", err)
		case err != nil:
			return fmt.Errorf("publish %s: %w", out[i].Key(), err)
		default:
			m.metrics.published.Inc()
		}
	}
	return nil
}

func (m *Merger) attachTitles(ctx context.Context, l *model.List) {
	ids := make([]string, len(l.Items))
	for i, it := range l.Items {
		ids[i] = it.ItemID
	}
	got, err := m.cfg.Titles.Titles(ctx, ids)
	if err != nil {
		m.metrics.titleFailures.Inc()
		m.cfg.Log.Warn("title lookup failed; reusing previous titles", "err", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for id, t := range got {
		m.titles[id] = t
	}
	for i := range l.Items {
		meta := m.titles[l.Items[i].ItemID]
		l.Items[i].Title, l.Items[i].Thumbnail = meta.Title, meta.Thumbnail
	}
}

// RunConfig says where the partials come from. Start from DefaultRunConfig: a zero field
// means zero, and Run refuses an empty Topic or a zero PublishEvery by the field's name.
type RunConfig struct {
	// Kafka is the client of the partials' readers (brokers, TLS, SASL). Required.
	Kafka *eventlog.Client
	// Topic is the partials topic; default DefaultTopic (trending.partials). Not empty.
	Topic string
	// PublishEvery is the longest a newer list waits to be merged and written: Run publishes
	// as soon as every partition heard from within Staleness has sent a newer list, and at
	// the latest PublishEvery after the first one; positive, default 1s. Without news it
	// still publishes every 5s or PublishEvery, whichever is longer (the all-time base may
	// change).
	PublishEvery time.Duration
	// Lookback: on start, read partials from this long ago, so a restarted or standby merger
	// rebuilds every partition's last list. Default 2 x DefaultStaleness + 1m (7m): keep it
	// at 2 x Config.Staleness + 1m when changing Staleness. 0 reads from now on: no partition
	// has a list until it publishes again. Negative is refused.
	Lookback time.Duration
}

// DefaultRunConfig returns the documented defaults, without the Kafka client Run requires.
func DefaultRunConfig() RunConfig {
	return RunConfig{Topic: DefaultTopic, PublishEvery: time.Second, Lookback: 2*DefaultStaleness + time.Minute}
}

// Validate reports every setting that cannot work, each an error wrapping setting.ErrConfig
// that names its field.
func (rc RunConfig) Validate() error {
	d := DefaultRunConfig()
	var errs []error
	if rc.Kafka == nil {
		errs = append(errs, setting.Invalid("Kafka", "no Kafka brokers"))
	}
	if rc.Topic == "" {
		errs = append(errs, setting.Invalid("Topic", "must not be empty (default %q)", d.Topic))
	}
	if rc.PublishEvery <= 0 {
		errs = append(errs, setting.Invalid("PublishEvery", "%s: must be positive (default %s)", rc.PublishEvery, d.PublishEvery))
	}
	if rc.Lookback < 0 {
		errs = append(errs, setting.Invalid("Lookback", "%s: must not be negative (0: from now; default %s)", rc.Lookback, d.Lookback))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	return nil
}

// Run consumes the partials topic (every partition, no consumer group: each merger, active or
// standby, sees everything) and publishes until ctx ends.
func (m *Merger) Run(ctx context.Context, rc RunConfig) error {
	if err := rc.Validate(); err != nil {
		return err
	}
	conn, err := rc.Kafka.Dial(ctx) // the first broker that answers
	if err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	parts, err := conn.ReadPartitions(rc.Topic)
	conn.Close()
	if err != nil {
		return fmt.Errorf("merge: partitions of %s: %w", rc.Topic, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, len(parts))
	var wg sync.WaitGroup
	for _, p := range parts {
		wg.Add(1)
		go func(partition int) {
			defer wg.Done()
			errc <- m.consume(ctx, rc, partition)
		}(p.ID)
	}
	tick := time.NewTicker(max(rc.PublishEvery, 5*time.Second))
	defer tick.Stop()
	deadline := time.NewTimer(time.Hour)
	deadline.Stop()
	armed := false
	publish := func(now time.Time) {
		if armed {
			deadline.Stop()
			armed = false
		}
		if err := m.Publish(ctx, now); err != nil && ctx.Err() == nil {
			m.cfg.Log.Warn("publish failed; will retry", "err", err)
		}
	}
	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-errc:
			if err != nil && ctx.Err() == nil {
				runErr = err
				break loop
			}
		case <-m.arrived:
			switch now := time.Now(); {
			case m.allFresh(now):
				publish(now)
			case !armed:
				deadline.Reset(rc.PublishEvery)
				armed = true
			}
		case now := <-deadline.C:
			armed = false
			publish(now)
		case now := <-tick.C:
			publish(now)
		}
	}
	cancel()
	wg.Wait()
	// A last publish so a graceful stop leaves the newest lists behind.
	pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer pcancel()
	if err := m.Publish(pctx, time.Now()); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

// consume reads one partition of the partials topic until ctx ends. Broker errors are
// retried with backoff: a merger outlives broker restarts and leader moves.
func (m *Merger) consume(ctx context.Context, rc RunConfig, partition int) error {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := m.consumeOnce(ctx, rc, partition)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		m.cfg.Log.Warn("reading partials failed; retrying", "partition", partition, "err", err, "in", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
	return nil
}

func (m *Merger) consumeOnce(ctx context.Context, rc RunConfig, partition int) error {
	r := rc.Kafka.Reader(kafka.ReaderConfig{Topic: rc.Topic, Partition: partition, MaxWait: 250 * time.Millisecond})
	defer r.Close()
	if err := r.SetOffsetAt(ctx, time.Now().Add(-rc.Lookback)); err != nil {
		return fmt.Errorf("merge: seek %s/%d: %w", rc.Topic, partition, err)
	}
	for {
		msg, err := r.FetchMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("merge: read %s/%d: %w", rc.Topic, partition, err)
		}
		p, err := model.DecodePartial(msg.Value)
		if err != nil {
			m.cfg.Log.Warn("skipping undecodable partial", "partition", partition, "offset", msg.Offset, "err", err)
			continue
		}
		m.Offer(p)
	}
}
