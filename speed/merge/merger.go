package merge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/setting"
	"trending/model"
	"trending/model/moderation"
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
// field's name. A nil Log discards, a nil Registry keeps no metrics. Titles are not the
// merger's: the store it is given attaches them (store.WithTitles), as the batch's does.
type Config struct {
	// K is the length of a served list, 1..1000; default 100.
	K int
	// Partitions is how many partitions the views topic has: a partition with no list at all
	// counts as stale. 0 means "whatever partitions have reported".
	Partitions int
	// Staleness: a partition whose newest list is older than the newest partition's by more
	// than this is stale (its last list is reused, the result marked incomplete). Positive;
	// default 3m.
	Staleness time.Duration
	// Retention: calendar windows that ended longer ago than this are forgotten. Positive;
	// default 48h.
	Retention time.Duration
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
	// Shard, when set, makes this a shard merger of a two-level merge (shard.go,
	// docs/scale-out.md): instead of writing lists to Store it emits one partial per list
	// that merges its shard's partitions (Shard.Emit), for a top merger. Store is then not
	// used and may be nil. Default nil: a merger that writes the served lists
	// (the only one, or the top merger over shard partials).
	Shard *Shard
	// Removed returns the items moderation removes from the served lists (model/moderation):
	// they are dropped before ranking, so a list still holds K items (each partition's top
	// M x K leaves room for (M-1) x K removed items among its leaders). Called at every
	// build; call ModerationChanged when its answer changes, so held lists are published
	// again. nil removes nothing. A shard merger ignores it: the top merger applies it.
	Removed func() *moderation.Set
}

// DefaultConfig returns the documented defaults, without the Store New requires. It is the
// one place the defaults live.
func DefaultConfig() Config {
	return Config{K: 100, Staleness: DefaultStaleness, Retention: 48 * time.Hour, BaseRefresh: 30 * time.Second, Windows: windowset.Default()}
}

// StalenessFor is the staleness of a merger that knows its speed workers publish every
// publishEvery (`trending up`, which runs both): a partition is stale once it missed three
// publishes. A merger of a cluster cannot know the workers' cadence and keeps
// DefaultStaleness unless told (`merge --staleness`).
func StalenessFor(publishEvery time.Duration) time.Duration { return 3 * publishEvery }

// LookbackFor is RunConfig.Lookback for a merger whose Config.Staleness is staleness: twice
// the staleness and a minute, so a restarted or standby merger reads back every partition's
// last list, stale ones included. The one rule: merge and up both take it (RunDefaults).
func LookbackFor(staleness time.Duration) time.Duration { return 2*staleness + time.Minute }

// RunDefaults returns DefaultRunConfig with the settings derived from c: the Lookback that
// follows c.Staleness (LookbackFor).
func (c Config) RunDefaults() RunConfig {
	rc := DefaultRunConfig()
	rc.Lookback = LookbackFor(c.Staleness)
	return rc
}

// Validate reports every setting that cannot work, each an error wrapping setting.ErrConfig
// that names its field.
func (c Config) Validate() error {
	d := DefaultConfig()
	var errs []error
	if c.Store == nil && c.Shard == nil {
		errs = append(errs, setting.Invalid("Store", "no serving store"))
	}
	if c.Shard != nil {
		errs = append(errs, c.Shard.validate()...)
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

	mu    sync.Mutex
	lists map[model.Key]map[int]model.Partial // newest list of each partition, per served list
	// prev is, per live list and partition, the partition's newest list with the span start
	// before its newest list's (WindowStart): a merge takes one start for every partition, and
	// uses it for a partition that has moved on while a slower one has not (gather).
	prev    map[model.Key]map[int]model.Partial
	dirty   map[model.Key]bool
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

	// kafka is the merger's view of the brokers: an outage of the partials topic is logged
	// once and shown as trending_kafka_up{role="merge"}; the readers retry, the held lists
	// stay and are still published (their partitions turning stale as they age).
	kafka *eventlog.Health

	// full says, per partition, whether its newest list of all items said GroupsFull: it
	// keeps no lists for some group value it saw, so a group list it sends nothing for may
	// miss its counts.
	full map[int]bool
}

type metrics struct {
	offered, published, refused, unconfigured prometheus.Counter
	stale                                     *prometheus.GaugeVec
}

// New builds a Merger, or returns the settings that cannot work (Validate).
func New(cfg Config) (*Merger, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Merger{cfg: cfg, lists: map[model.Key]map[int]model.Partial{}, prev: map[model.Key]map[int]model.Partial{}, dirty: map[model.Key]bool{},
		fresh: map[int]bool{}, heard: map[int]time.Time{}, arrived: make(chan struct{}, 1), unconfigured: map[string]bool{}, full: map[int]bool{}}
	m.metrics = metrics{
		offered:      prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_merge_partials_total", Help: "model.Partial lists received from speed workers."}),
		published:    prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_merge_lists_published_total", Help: "Merged lists written to the serving store (a shard merger: shard lists written for the top merger)."}),
		refused:      prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_merge_writes_refused_total", Help: "Writes the serving store refused as stale or superseded."}),
		unconfigured: prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_merge_partials_unconfigured_total", Help: "Partials dropped because their window is not in the configured window set."}),
		stale:        prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "trending_merge_stale_partitions", Help: "Partitions whose list was stale or missing in the last merge, by window."}, []string{"window"}),
	}
	if cfg.Registry != nil {
		for _, c := range []prometheus.Collector{m.metrics.offered, m.metrics.published, m.metrics.refused, m.metrics.unconfigured, m.metrics.stale} {
			if err := cfg.Registry.Register(c); err != nil {
				return nil, fmt.Errorf("merge metrics: %w", err)
			}
		}
	}
	hc := eventlog.DefaultHealthConfig()
	hc.Role, hc.Log, hc.Registerer = "merge", cfg.Log, cfg.Registry
	h, err := eventlog.NewHealth(hc)
	if err != nil {
		return nil, err
	}
	m.kafka = h
	return m, nil
}

// removed is the set Config.Removed returns now (nil: nothing removed).
func (m *Merger) removed() *moderation.Set {
	if m.cfg.Removed == nil {
		return nil
	}
	return m.cfg.Removed()
}

// ModerationChanged marks every held list for the next Publish, and wakes Run: the
// moderation list changed, so a list may lose an item or take a restored one back. Safe for
// concurrent use.
func (m *Merger) ModerationChanged() {
	m.mu.Lock()
	for k := range m.lists {
		m.dirty[k] = true
	}
	m.mu.Unlock()
	select {
	case m.arrived <- struct{}{}:
	default:
	}
}

// Offer takes a partial; an older version than the one held for its (window, partition) is
// ignored, so replays and a second worker's late copy do no harm.
func (m *Merger) Offer(p model.Partial) {
	m.metrics.offered.Inc()
	m.mu.Lock()
	defer m.mu.Unlock()
	k, kind := p.Key(), p.KindOf()
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
		if !cur.WindowStart.IsZero() && p.WindowStart.After(cur.WindowStart) {
			if m.prev[k] == nil {
				m.prev[k] = map[int]model.Partial{}
			}
			m.prev[k][p.Partition] = cur
		}
	}
	byPart[p.Partition] = p
	if k.Group == "" && (kind == model.PartialItems || kind == model.PartialScored) && (!ok || p.Version > cur.Version) {
		// Which partitions ran out of group values, from the newest list of all items each
		// sent (a shard merger's partial says it per member).
		if len(p.Members) == 0 {
			m.full[p.Partition] = p.GroupsFull
		}
		for _, mb := range p.Members {
			m.full[mb.Partition] = mb.GroupsFull
		}
	}
	if kind == model.PartialSince && m.cfg.Shard == nil {
		k = allKey // a shard merger passes the counts since B on as they are
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
	kind := p.KindOf()
	if kind == model.PartialSince {
		return m.cfg.Windows.HasLive(windowset.AllName)
	}
	k := p.Key()
	if w, ok := m.cfg.Windows.Lookup(k.Window, false); ok && k.Live() && !k.IsTopics() {
		// A decayed window's partials must carry its half-life, and only its partials any.
		if hl := int64(w.HalfLife / time.Second); (w.Kind == windowset.Decayed) != (kind == model.PartialScored) || (kind == model.PartialScored && p.HalfLifeSeconds != hl) {
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
	g, ok := m.gather(k)
	if !ok {
		return model.List{}, nil, false
	}
	// The speed layer's counts are never claimed exact: events later than the allowed
	// lateness are missing from them (and sketch counts are estimates). A calendar window is
	// provisional once every partition has sent its final list, live before.
	l := model.List{Kind: model.ListItems, Source: model.SourceSpeed, Status: model.StatusLive, Version: g.newest, AsOf: time.UnixMilli(g.asOf).UTC(),
		End: g.end, WindowStart: g.windowStart}
	l.SetKey(k)
	if !k.Live() {
		l.DroppedLate = g.droppedLate
	}
	if g.final {
		l.Status = model.StatusProvisional
	}
	if len(g.stale) > 0 {
		l.Incomplete, l.StalePartitions = true, g.stale
	}
	if !l.WindowStart.IsZero() {
		l.WindowEnd = l.AsOf
	}
	removed := m.removed()
	switch g.kind {
	case model.PartialTopics:
		l.Kind, l.ErrorBound, l.Baseline = model.ListTopics, g.bound, g.baseline
		l.Items = mergeTopics(m.cfg.K, g.ins)
		return l, g.stale, true
	case model.PartialScored:
		hl := g.halfLife
		merged, salted := mergeDecayed(removed.Want(m.cfg.K), g.ins, l.AsOf, hl)
		merged = moderation.Top(merged, removed, m.cfg.K, func(e topk.Scored) string { return e.Item })
		l.Kind, l.HalfLifeSeconds = model.ListScored, hl
		l.Items = decayedItems(merged)
		names := make([]string, len(merged))
		for i, e := range merged {
			names[i] = e.Item
		}
		parts := make([]saltedPart, len(salted))
		for i, s := range salted {
			parts[i] = saltedPart{s.Item, s.Over, s.Sketches}
		}
		l.ErrorBound = saltedBound(g.bound, names, parts)
		return l, g.stale, true
	}
	if isFrequent(g.ins) {
		fm, _ := mergeFrequent(removed.Want(m.cfg.K), g.ins)
		fm = moderateFrequent(fm, removed, m.cfg.K)
		l.Kind, l.Frequent, l.Cutoff, l.Items = model.ListFrequent, true, fm.Cutoff, frequentItems(fm)
		return l, g.stale, true
	}
	merged, salted := mergeCounts(removed.Want(m.cfg.K), g.ins)
	merged = moderation.Top(merged, removed, m.cfg.K, func(e topk.Entry) string { return e.Item })
	names := make([]string, len(merged))
	for i, e := range merged {
		names[i] = e.Item
	}
	parts := make([]saltedPart, len(salted))
	for i, s := range salted {
		parts[i] = saltedPart{s.Item, s.Over, s.Sketches}
	}
	l.ErrorBound = saltedBound(g.bound, names, parts)
	l.Items = make([]model.Item, len(merged))
	for i, e := range merged {
		l.Items[i] = model.Item{Rank: i + 1, ItemID: e.Item, Views: e.Count}
	}
	return l, g.stale, true
}

// gathered is what the newest partials of one list say together, before their items are
// merged.
type gathered struct {
	ins         []model.Partial // by partition (or group) number
	newest      int64           // the newest version
	asOf        int64           // the newest version of the lists merged (newest, unless a prev list)
	windowStart time.Time       // the one start of the lists merged (sliding and all-time lists)
	end         time.Time
	final       bool            // a calendar window whose every list is final
	droppedLate uint64          // summed
	stale       []int           // partitions whose list is older than newest - Staleness, or missing
	members     []model.Member  // every partition merged, with its list's version
	bound       *model.Bound    // the worst list's bound
	baseline    *model.Baseline // topics lists: the worst partition's baseline
	exact       bool            // every list is exact
	total       uint64
	kind        model.PartialKind // the newest list's (model.Partial.KindOf): how to merge
	halfLife    int64             // a scored list's half-life, the newest's: others are left out
}

// gather collects the newest partials of list k; ok is false when there are none, or only
// late-drop counts with no list to amend yet. The staleness rule applies to partitions: a
// shard partial's members count one by one (model.Partial.Members), so two levels mark the
// same partitions stale as one.
func (m *Merger) gather(k model.Key) (gathered, bool) {
	byPart := m.lists[k]
	if len(byPart) == 0 {
		return gathered{}, false
	}
	g := gathered{final: !k.Live(), exact: true}
	for _, p := range byPart {
		g.newest = max(g.newest, p.Version)
	}
	cutoff := g.newest - m.cfg.Staleness.Milliseconds()
	g.windowStart = m.spanStart(k, byPart, cutoff)
	parts := make([]int, 0, len(byPart))
	for part := range byPart {
		parts = append(parts, part)
	}
	sort.Ints(parts)
	items := false
	seen := map[int]bool{}
	for _, part := range parts {
		p := byPart[part]
		other := false // p counts a span from another start
		if !g.windowStart.IsZero() && !p.WindowStart.Equal(g.windowStart) {
			if q, ok := m.prev[k][part]; ok && q.WindowStart.Equal(g.windowStart) {
				p = q
			} else {
				other = true
			}
		}
		g.ins = append(g.ins, p)
		g.asOf = max(g.asOf, asOfMs(p))
		members := p.Members
		if len(members) == 0 {
			members = []model.Member{{Partition: p.Partition, Version: p.Version, GroupsFull: p.GroupsFull}}
		}
		for _, mb := range members {
			seen[mb.Partition] = true
			g.members = append(g.members, mb)
			if mb.Version < cutoff || other {
				g.stale = append(g.stale, mb.Partition)
			}
		}
		if !p.End.IsZero() {
			g.end = p.End
		}
		g.final = g.final && p.Final
		items = items || !p.LateOnly
		g.droppedLate += p.DroppedLate
		g.total += p.Total
		g.exact = g.exact && p.Exact
		if b := p.Baseline; b != nil {
			if g.baseline == nil {
				g.baseline = &model.Baseline{Days: b.Days, Wanted: b.Wanted, Unavailable: b.Unavailable, MaxOvercount: b.MaxOvercount}
			} else {
				g.baseline.Days = min(g.baseline.Days, b.Days)
				g.baseline.Wanted = max(g.baseline.Wanted, b.Wanted)
				g.baseline.Unavailable = max(g.baseline.Unavailable, b.Unavailable)
				g.baseline.MaxOvercount = math.Max(g.baseline.MaxOvercount, b.MaxOvercount)
			}
		}
		if !p.Exact && p.Bound != nil {
			if g.bound == nil {
				g.bound = &model.Bound{MaxOvercount: p.Bound.MaxOvercount, Probability: p.Bound.Probability}
			} else {
				// Each unsalted item's count comes from one partition: the worst partition's
				// bound holds for all (salted items: saltedBound).
				g.bound.MaxOvercount = math.Max(g.bound.MaxOvercount, p.Bound.MaxOvercount)
				g.bound.Probability = math.Min(g.bound.Probability, p.Bound.Probability)
			}
		}
	}
	if k.Group != "" && !k.IsTopics() {
		g.stale = append(g.stale, m.missingFromGroup(k, seen, cutoff)...)
	} else {
		for part := 0; part < m.cfg.Partitions; part++ {
			if !seen[part] {
				g.stale = append(g.stale, part)
			}
		}
	}
	if !items {
		return gathered{}, false // only late-drop counts: no partition's list to amend yet
	}
	for _, p := range g.ins {
		if p.Version == g.newest {
			g.kind, g.halfLife = p.KindOf(), p.HalfLifeSeconds
			break
		}
	}
	sort.Ints(g.stale)
	g.stale = slices.Compact(g.stale)
	slices.SortFunc(g.members, func(a, b model.Member) int { return a.Partition - b.Partition })
	return g, true
}

// spanStart is the one span start of a live sliding list's merge (zero for other lists,
// whose partials carry none): the earliest start of the partitions within the staleness (one
// that has not yet reached the minute its faster peers moved to), but at most one bucket
// before the newest (a partition further behind is one catching up, marked stale rather
// than holding every other back). A partition past that start merges its last list from it
// (prev), so that every count covers the same span and ranks do not flip as partitions cross
// a boundary one by one; one without such a list is marked stale, as it counts a shorter
// span. (A partition's start is a function of its as-of, speed/window: partitions at one
// as-of minute state one start.)
func (m *Merger) spanStart(k model.Key, byPart map[int]model.Partial, cutoff int64) time.Time {
	var hi time.Time
	for _, p := range byPart {
		if p.Version >= cutoff && p.WindowStart.After(hi) {
			hi = p.WindowStart
		}
	}
	w, _ := m.cfg.Windows.Lookup(k.Window, false)
	floor, lo := hi.Add(-w.Bucket), hi
	for _, p := range byPart {
		if p.Version >= cutoff && !p.WindowStart.Before(floor) && p.WindowStart.Before(lo) {
			lo = p.WindowStart
		}
	}
	return lo
}

// asOfMs is the newest event time a partial counts, in Unix ms: its version, or its AsOf
// where earlier (a shard partial that merged a list before its newest, spanStart).
func asOfMs(p model.Partial) int64 {
	if !p.AsOf.IsZero() {
		return min(p.Version, p.AsOf.UnixMilli())
	}
	return p.Version
}

// mergeCounts merges the lists ins into the best n items. An unsalted item is counted on one
// partition, so the lists merge as topk.Merge does; a salted item (one any list reports in
// Salted) is counted on several, so its counts are summed over the lists first, each list's
// count taken once (from Salted, or from Items where a list does not know the item is salted).
// This is the one place partial counts are summed (seed 004). It also returns the salted
// items' sums, every one, each with the sum of its parts' bounds (model.SaltedCount).
func mergeCounts(n int, ins []model.Partial) ([]topk.Entry, []model.SaltedCount) {
	var salted map[string]*model.SaltedCount
	for _, p := range ins {
		for _, s := range p.Salted {
			if salted == nil {
				salted = map[string]*model.SaltedCount{}
			}
			if salted[s.Item] == nil {
				salted[s.Item] = &model.SaltedCount{Item: s.Item}
			}
		}
	}
	lists := make([][]topk.Entry, 0, len(ins)+1)
	if salted == nil {
		for _, p := range ins {
			lists = append(lists, p.Items)
		}
		return topk.Merge(n, lists...), nil
	}
	for _, p := range ins {
		var over float64
		var sketches int
		if !p.Exact && p.Bound != nil {
			over, sketches = p.Bound.MaxOvercount, 1
		}
		took := make(map[string]bool, len(p.Salted))
		for _, s := range p.Salted {
			if took[s.Item] {
				continue
			}
			took[s.Item] = true
			sum := salted[s.Item]
			sum.Count += s.Count
			if s.Sketches > 0 {
				sum.Over, sum.Sketches = sum.Over+s.Over, sum.Sketches+s.Sketches
			} else {
				sum.Over, sum.Sketches = sum.Over+over, sum.Sketches+sketches
			}
		}
		rest := make([]topk.Entry, 0, len(p.Items))
		for _, e := range p.Items {
			sum := salted[e.Item]
			if sum == nil {
				rest = append(rest, e)
				continue
			}
			if !took[e.Item] {
				took[e.Item] = true
				sum.Count += e.Count
				sum.Over, sum.Sketches = sum.Over+over, sum.Sketches+sketches
			}
		}
		lists = append(lists, rest)
	}
	sums := make([]model.SaltedCount, 0, len(salted))
	entries := make([]topk.Entry, 0, len(salted))
	for _, s := range salted {
		sums = append(sums, *s)
		entries = append(entries, topk.Entry{Item: s.Item, Count: s.Count})
	}
	slices.SortFunc(sums, func(a, b model.SaltedCount) int { return strings.Compare(a.Item, b.Item) })
	return topk.Merge(n, append(lists, entries)...), sums
}

// saltedPart is a salted item's sum of its parts' bounds (SaltedCount, SaltedScore).
type saltedPart struct {
	item     string
	over     float64
	sketches int
}

// saltedBound is the error bound of a merged list: the worst list's bound holds for an
// unsalted item (counted on one partition), and a listed salted item's estimate is a sum of
// estimates, so it may be high by the sum of their bounds, with the chance that any of them
// fails added up (a union bound). nil when every count is exact.
func saltedBound(b *model.Bound, items []string, salted []saltedPart) *model.Bound {
	if b == nil || len(salted) == 0 {
		return b
	}
	out := *b
	fail := 1 - b.Probability // one sketch's chance of exceeding its bound (the worst list's)
	listed := make(map[string]bool, len(items))
	for _, it := range items {
		listed[it] = true
	}
	for _, s := range salted {
		if !listed[s.item] || s.sketches == 0 {
			continue
		}
		out.MaxOvercount = math.Max(out.MaxOvercount, s.over)
		out.Probability = math.Min(out.Probability, math.Max(0, 1-float64(s.sketches)*fail))
	}
	return &out
}

// missingFromGroup returns the partitions that sent no list for group key k (seen holds those
// that did) although their counts of it may be missing: a partition that never saw the value
// sends none and is not missing, but one whose list of all items for the same window is
// missing or stale (behind cutoff) is, and so is one that ran out of group values
// (GroupsFull: it may have dropped the value's events). A shard merger's partials name their
// partitions (Members), so two levels find the same ones.
func (m *Merger) missingFromGroup(k model.Key, seen map[int]bool, cutoff int64) []int {
	versions := map[int]int64{} // the partitions of the list of all items, each one's version
	for _, p := range m.lists[model.Key{Window: k.Window, Start: k.Start}] {
		if len(p.Members) == 0 {
			versions[p.Partition] = p.Version
		}
		for _, mb := range p.Members {
			versions[mb.Partition] = mb.Version
		}
	}
	var out []int
	consider := func(part int) {
		if seen[part] || slices.Contains(out, part) {
			return
		}
		if v, ok := versions[part]; !ok || v < cutoff || m.full[part] {
			out = append(out, part)
		}
	}
	for part := 0; part < m.cfg.Partitions; part++ {
		consider(part)
	}
	for part := range versions {
		consider(part)
	}
	for part := range m.full {
		consider(part)
	}
	return out
}

// mergeDecayed joins the lists' decayed scores as of asOf: each list's scores are as of its
// own AsOf, so they are first decayed to asOf (multiplied by 2^(-dt/half-life): what a score
// becomes with no new views, which is all the merger knows of a partition that is behind),
// then ranked best first, at most k. An unsalted item is scored on one partition, so the merge
// is exact; a salted item's scores (SaltedScored, or Scored where a list does not know it is
// salted, each list's once) are summed first, as mergeCounts sums counts: a decayed score is a
// sum over views, so the parts add up. It also returns the salted items' sums, every one, with
// the sum of their parts' bounds. A partial of another half-life (a worker with another window
// set) is left out.
func mergeDecayed(k int, ins []model.Partial, asOf time.Time, hl int64) ([]topk.Scored, []model.SaltedScore) {
	var salted map[string]*model.SaltedScore
	for _, p := range ins {
		for _, s := range p.SaltedScored {
			if p.HalfLifeSeconds != hl {
				continue
			}
			if salted == nil {
				salted = map[string]*model.SaltedScore{}
			}
			if salted[s.Item] == nil {
				salted[s.Item] = &model.SaltedScore{Item: s.Item}
			}
		}
	}
	lists := make([][]topk.Scored, 0, len(ins)+1)
	for _, p := range ins {
		if p.HalfLifeSeconds != hl {
			continue
		}
		f := math.Exp2(-float64(asOf.Sub(p.AsOf).Milliseconds()) / float64(hl*1000))
		var over float64
		var sketches int
		if !p.Exact && p.Bound != nil {
			over, sketches = p.Bound.MaxOvercount, 1
		}
		took := map[string]bool{}
		for _, s := range p.SaltedScored {
			if sum := salted[s.Item]; sum != nil && !took[s.Item] {
				took[s.Item] = true
				sum.Score += s.Score * f
				if s.Sketches > 0 {
					sum.Over, sum.Sketches = sum.Over+s.Over, sum.Sketches+s.Sketches
				} else {
					sum.Over, sum.Sketches = sum.Over+over, sum.Sketches+sketches
				}
			}
		}
		l := make([]topk.Scored, 0, len(p.Scored))
		for _, e := range p.Scored {
			if sum := salted[e.Item]; sum != nil {
				if !took[e.Item] {
					took[e.Item] = true
					sum.Score += e.Score * f
					sum.Over, sum.Sketches = sum.Over+over, sum.Sketches+sketches
				}
				continue
			}
			if s := e.Score * f; s > 0 && !math.IsInf(s, 1) {
				l = append(l, topk.Scored{Item: e.Item, Score: s})
			}
		}
		lists = append(lists, l)
	}
	if salted == nil {
		return topk.MergeScored(k, lists...), nil
	}
	sums := make([]model.SaltedScore, 0, len(salted))
	entries := make([]topk.Scored, 0, len(salted))
	for _, s := range salted {
		sums = append(sums, *s)
		if s.Score > 0 && !math.IsInf(s.Score, 1) {
			entries = append(entries, topk.Scored{Item: s.Item, Score: s.Score})
		}
	}
	slices.SortFunc(sums, func(a, b model.SaltedScore) int { return strings.Compare(a.Item, b.Item) })
	return topk.MergeScored(k, append(lists, entries)...), sums
}

// decayedItems is a decayed list's items.
func decayedItems(merged []topk.Scored) []model.Item {
	items := make([]model.Item, len(merged))
	for i, e := range merged {
		items[i] = model.Item{Rank: i + 1, ItemID: e.Item, Views: model.DecayedViews(e.Score), DecayedScore: e.Score}
	}
	return items
}

// mergeTopics joins the partitions' topics lists: best score first (ties by topic), at most
// k, or the smallest Limit a partition asked for.
func mergeTopics(k int, ins []model.Partial) []model.Item {
	var all []model.Item
	for _, p := range ins {
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

// Publish merges every list that changed since the last call and writes it (the store
// attaches the titles: store.WithTitles).
// Store refusals (a newer list is already there) are counted and logged, not returned.
func (m *Merger) Publish(ctx context.Context, now time.Time) error {
	if m.cfg.Shard != nil {
		m.mu.Lock()
		clear(m.fresh)
		m.mu.Unlock()
		return m.publishShard(ctx, now)
	}
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
	m.forget(now)
	m.mu.Unlock()

	sort.Slice(out, func(i, j int) bool { return out[i].Key().String() < out[j].Key().String() })
	for i := range out {
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

// forget drops the calendar windows that closed longer than Retention before now.
func (m *Merger) forget(now time.Time) {
	for k, byPart := range m.lists {
		for _, p := range byPart {
			if !p.End.IsZero() && now.Sub(p.End) > m.cfg.Retention {
				delete(m.lists, k)
			}
			break
		}
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
	// rebuilds every partition's last list. Default LookbackFor(DefaultStaleness) (7m);
	// Config.RunDefaults follows a changed Staleness. 0 reads from now on: no partition
	// has a list until it publishes again. Negative is refused.
	Lookback time.Duration
}

// DefaultRunConfig returns the documented defaults, without the Kafka client Run requires.
func DefaultRunConfig() RunConfig {
	return RunConfig{Topic: DefaultTopic, PublishEvery: time.Second, Lookback: LookbackFor(DefaultStaleness)}
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
	parts, err := m.partitions(ctx, rc)
	if err != nil {
		return err
	}
	if g := m.cfg.Shard; g != nil {
		// A shard merger reads its own partials partition only.
		i := slices.IndexFunc(parts, func(p kafka.Partition) bool { return p.ID == g.Index })
		if i < 0 {
			return fmt.Errorf("merge: shard %d: %s has %d partitions (0..%d): give it at least %d (kafka-topics.sh --alter --partitions), or run shard mergers 0..%d only",
				g.Index, rc.Topic, len(parts), len(parts)-1, g.Index+1, len(parts)-1)
		}
		parts = parts[i : i+1]
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

// partitions returns the partials topic's partitions, waiting with a bounded backoff while
// the brokers do not answer (a merger started during an outage waits for its end).
func (m *Merger) partitions(ctx context.Context, rc RunConfig) ([]kafka.Partition, error) {
	pause := eventlog.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for {
		conn, err := rc.Kafka.Dial(ctx) // the first broker that answers
		if err == nil {
			var parts []kafka.Partition
			parts, err = conn.ReadPartitions(rc.Topic)
			conn.Close()
			if err == nil {
				m.kafka.OK()
				return parts, nil
			}
			err = fmt.Errorf("partitions of %s: %w", rc.Topic, err)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("merge: %w", err)
		}
		if ferr := m.kafka.Failed("read the partitions of "+rc.Topic, err); ferr != nil {
			return nil, fmt.Errorf("merge: %w", ferr)
		}
		if !pause.Wait(ctx) {
			return nil, fmt.Errorf("merge: %w", err)
		}
	}
}

// consume reads one partition of the partials topic until ctx ends. Broker errors are
// retried with backoff: a merger outlives broker restarts and leader moves, logging an
// outage once (eventlog.Health); an unrecoverable one (ErrUnrecoverable) is returned and
// ends Run.
func (m *Merger) consume(ctx context.Context, rc RunConfig, partition int) error {
	pause := eventlog.Backoff{Min: 100 * time.Millisecond, Max: 5 * time.Second}
	for ctx.Err() == nil {
		err := m.consumeOnce(ctx, rc, partition, &pause)
		if err == nil || ctx.Err() != nil {
			return nil
		}
		if ferr := m.kafka.Failed(fmt.Sprintf("read %s/%d", rc.Topic, partition), err); ferr != nil {
			return fmt.Errorf("merge: %w", ferr)
		}
		m.cfg.Log.Debug("reading partials failed; retrying", "partition", partition, "err", err)
		pause.Wait(ctx)
	}
	return nil
}

func (m *Merger) consumeOnce(ctx context.Context, rc RunConfig, partition int, pause *eventlog.Backoff) error {
	failing := true // until a message is read: a success after failures ends the outage
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
		if failing {
			failing = false
			m.kafka.OK()
			pause.Reset()
		}
		p, err := model.DecodePartial(msg.Value)
		if err != nil {
			m.cfg.Log.Warn("skipping undecodable partial", "partition", partition, "offset", msg.Offset, "err", err)
			continue
		}
		m.Offer(p)
	}
}
