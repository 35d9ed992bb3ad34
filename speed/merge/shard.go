package merge

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/setting"
	"trending/model"
	"trending/model/topk"
)

// Two-level merge (docs/scale-out.md, "How many mergers").
//
// One merger decodes every partition's partials: at 3,200 partitions and a 1-second publish
// that is more than a core. With the partials topic in G partitions (eventlog.SourceBalancer
// puts views partition p's partials on partition p mod G), G shard mergers each read one
// partials partition and emit, per window, one shard partial: the merge of their partitions'
// lists cut to the best M x K items (a partition's own over-report), with every salted item's
// summed count, the members' versions and the rest a partial carries, to the topic
// trending.partials.top; one top merger reads that topic and writes the served lists as a
// one-level merger does, with Partitions the views topic's count.
//
// It stays exact: an item in the global top K is in its partition's top K (the proof of the
// one-level merge), so in its shard's top K (an item ahead of it in the shard is ahead of it
// globally; a salted item's shard sum is at most its total), and the top merger sees it.
// Versions stay monotonic: a shard partial's version is its newest member's, and a member's
// only grows (Offer drops older lists), so the top merger drops a paused or restarted shard
// merger's older partials as it drops a partition's. The staleness rule applies to the
// members (model.Partial.Members carries each one's version), so the served list names the
// same stale partitions as one level would, missing partitions included.

// Shard makes a Merger one shard merger of a two-level merge (Config.Shard).
type Shard struct {
	// Index is the shard's number: the partials-topic partition it reads and the Partition
	// of the partials it emits. At least 0.
	Index int
	// M: a shard partial keeps its best M x K items, as a partition's list does; 1..10,
	// default 3.
	M int
	// Emit sends the shard's partials (one publish); required. ShardWriter writes them to
	// Kafka.
	Emit func(ctx context.Context, ps []model.Partial) error
}

// DefaultShard returns a shard's defaults, without the Emit it requires.
func DefaultShard(index int) *Shard { return &Shard{Index: index, M: 3} }

func (g *Shard) validate() []error {
	var errs []error
	if g.Index < 0 {
		errs = append(errs, setting.Invalid("Shard.Index", "%d: must be at least 0", g.Index))
	}
	if g.M < 1 || g.M > 10 {
		errs = append(errs, setting.Invalid("Shard.M", "%d: must be 1..10 (default 3)", g.M))
	}
	if g.Emit == nil {
		errs = append(errs, setting.Invalid("Shard.Emit", "no output for the shard's partials"))
	}
	return errs
}

// ShardWriter returns an Emit that writes shard partials to topic through w (w's own topic
// when it has one; one message per partial, keyed like a partition's).
func ShardWriter(w *eventlog.Writer, topic string) func(ctx context.Context, ps []model.Partial) error {
	return func(ctx context.Context, ps []model.Partial) error {
		msgs := make([]kafka.Message, 0, len(ps))
		for _, p := range ps {
			b, err := p.Encode()
			if err != nil {
				return err
			}
			msg := kafka.Message{Key: p.MessageKey(), Value: b,
				Headers: []kafka.Header{{Key: eventlog.SourceHeader, Value: fmt.Appendf(nil, "%d", p.Partition)}}}
			if w.Topic == "" {
				msg.Topic = topic
			}
			msgs = append(msgs, msg)
		}
		if err := w.WriteMessages(ctx, msgs...); err != nil {
			return fmt.Errorf("write %d shard partials to %s: %w", len(msgs), topic, err)
		}
		return nil
	}
}

// publishShard emits a shard partial for every list that changed since the last publish.
func (m *Merger) publishShard(ctx context.Context, now time.Time) error {
	g := m.cfg.Shard
	m.mu.Lock()
	var out []model.Partial
	for k := range m.dirty {
		delete(m.dirty, k)
		var p model.Partial
		var ok bool
		if k.Window == model.SinceWindow {
			p, ok = m.shardSince()
		} else {
			p, ok = m.shardPartial(k)
		}
		if ok {
			out = append(out, p)
		}
	}
	m.forget(now)
	m.mu.Unlock()
	if len(out) == 0 {
		return nil
	}
	slices.SortFunc(out, func(a, b model.Partial) int { return compareKeys(a.Key(), b.Key()) })
	if err := g.Emit(ctx, out); err != nil {
		// Mark them dirty again: the next publish retries them with whatever is newer.
		m.mu.Lock()
		for _, p := range out {
			m.dirty[p.Key()] = true
		}
		m.mu.Unlock()
		return err
	}
	m.metrics.published.Add(float64(len(out)))
	return nil
}

func compareKeys(a, b model.Key) int {
	if c := a.Start.Compare(b.Start); c != 0 {
		return c
	}
	switch x, y := a.Name(), b.Name(); {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// shardPartial merges the shard's newest partials of list k into one partial.
func (m *Merger) shardPartial(k model.Key) (model.Partial, bool) {
	g, ok := m.gather(k)
	if !ok {
		return m.shardLateOnly(k)
	}
	p := model.Partial{Kind: g.kind, Window: g.ins[0].Window, Start: k.Start, End: g.end, Final: g.final, DroppedLate: g.droppedLate,
		Partition: m.cfg.Shard.Index, AsOf: time.UnixMilli(g.asOf).UTC(), WindowStart: g.windowStart, Version: g.newest,
		Exact: g.exact, Bound: g.bound, Total: g.total, Members: g.members}
	switch g.kind {
	case model.PartialTopics:
		p.Topics = mergeTopics(m.cfg.K, g.ins)
		for _, in := range g.ins {
			if in.Limit > 0 && (p.Limit == 0 || in.Limit < p.Limit) {
				p.Limit = in.Limit
			}
		}
	case model.PartialScored:
		// Scores as of the shard's AsOf; the top merger decays them on to its own.
		p.HalfLifeSeconds = g.halfLife
		p.Scored, p.SaltedScored = mergeDecayed(m.cfg.Shard.M*m.cfg.K, g.ins, p.AsOf, g.halfLife)
	default:
		p.Items, p.Salted = mergeCounts(m.cfg.Shard.M*m.cfg.K, g.ins)
	}
	if isFrequent(g.ins) {
		// One offset for the shard: the widest of its items' bounds (the largest member
		// offset, or a salted item's summed ones), so each item's Count+MaxError stays an
		// upper bound; the salted items' summed lower bounds go on, for the merger above to
		// sum across shards.
		fm, salted := mergeFrequent(m.cfg.Shard.M*m.cfg.K, g.ins)
		p.Items, p.Frequent, p.MaxError, p.Cutoff, p.Salted = nil, true, fm.MaxError, fm.Cutoff, salted
		for _, e := range fm.Entries {
			p.Items = append(p.Items, topk.Entry{Item: e.Item, Count: e.Lower})
			p.MaxError = max(p.MaxError, e.Upper-e.Lower)
		}
		p.Cutoff = max(p.Cutoff, p.MaxError)
	}
	return p, true
}

// shardLateOnly is the shard partial of a calendar list that has only late-drop counts (no
// member counted anything in the window): their sum, like a partition's late-only update.
func (m *Merger) shardLateOnly(k model.Key) (model.Partial, bool) {
	byPart := m.lists[k]
	if len(byPart) == 0 || k.Live() {
		return model.Partial{}, false
	}
	p := model.Partial{Kind: model.PartialItems, Start: k.Start, Final: true, LateOnly: true, Partition: m.cfg.Shard.Index}
	for _, in := range byPart {
		if !in.LateOnly {
			return model.Partial{}, false
		}
		p.Window, p.End, p.DroppedLate = in.Window, in.End, p.DroppedLate+in.DroppedLate
		p.Exact = in.Exact
		if in.Version > p.Version {
			p.Version, p.AsOf = in.Version, in.AsOf
		}
		p.Members = append(p.Members, model.Member{Partition: in.Partition, Version: in.Version})
	}
	slices.SortFunc(p.Members, func(a, b model.Member) int { return a.Partition - b.Partition })
	return p, p.Version > 0
}

// shardSince merges the shard's counts since the all-time boundary (model.SinceWindow
// partials) into one. Only members counting from the newest boundary among them are merged
// (the others are left out, so the top merger finds them missing: stale, as one level marks
// a partition on another boundary). Per item, each member's count is taken once (from Items,
// Base or Salted) and summed over the members; the partial keeps the best M x K items, every
// base item in Base and every salted item in Salted, and its Cutoff is the most an item it
// leaves out can have: the members' largest cutoff, or the best dropped item's count. From is
// the latest member's (the shard's counts are complete from there), and BaseVersion the
// members' common one (0 when they differ: the top merger then marks them stale).
func (m *Merger) shardSince() (model.Partial, bool) {
	byPart := m.lists[model.Key{Window: model.SinceWindow}]
	var boundary time.Time
	for _, p := range byPart {
		if p.Boundary.After(boundary) {
			boundary = p.Boundary
		}
	}
	out := model.Partial{Kind: model.PartialSince, Window: model.SinceWindow, Partition: m.cfg.Shard.Index, Exact: true, Boundary: boundary}
	counts := map[string]uint64{}
	inBase, inSalted := map[string]bool{}, map[string]bool{}
	baseVersion := int64(-1)
	for _, p := range byPart {
		if !p.Boundary.Equal(boundary) {
			continue
		}
		out.Members = append(out.Members, model.Member{Partition: p.Partition, Version: p.Version, AsOf: p.AsOf})
		if p.Version > out.Version {
			out.Version, out.AsOf = p.Version, p.AsOf
		}
		if p.From.After(out.From) {
			out.From = p.From
		}
		switch {
		case baseVersion == -1:
			baseVersion = p.BaseVersion
		case baseVersion != p.BaseVersion:
			baseVersion = 0
		}
		out.Cutoff = max(out.Cutoff, p.Cutoff)
		out.Total += p.Total
		seen := make(map[string]bool, len(p.Items)+len(p.Base)+len(p.Salted))
		take := func(item string, n uint64) {
			if !seen[item] {
				seen[item] = true
				counts[item] += n
			}
		}
		for _, e := range p.Items {
			take(e.Item, e.Count)
		}
		for _, e := range p.Base {
			take(e.Item, e.Count)
			inBase[e.Item] = true
		}
		for _, s := range p.Salted {
			take(s.Item, s.Count)
			inSalted[s.Item] = true
		}
	}
	if len(out.Members) == 0 {
		return model.Partial{}, false
	}
	out.BaseVersion = max(baseVersion, 0)
	slices.SortFunc(out.Members, func(a, b model.Member) int { return a.Partition - b.Partition })
	all := make([]topk.Entry, 0, len(counts))
	for it, n := range counts {
		all = append(all, topk.Entry{Item: it, Count: n})
		if inBase[it] {
			out.Base = append(out.Base, topk.Entry{Item: it, Count: n})
		}
		if inSalted[it] {
			out.Salted = append(out.Salted, model.SaltedCount{Item: it, Count: n})
		}
	}
	topk.Sort(all)
	n := m.cfg.Shard.M * m.cfg.K
	if len(all) > n {
		for _, e := range all[n:] {
			if !inBase[e.Item] && !inSalted[e.Item] {
				out.Cutoff = max(out.Cutoff, e.Count)
				break // sorted: the first one dropped is the best
			}
		}
		all = all[:n]
	}
	out.Items = all
	topk.Sort(out.Base)
	slices.SortFunc(out.Salted, func(a, b model.SaltedCount) int { return compareEntries(a.Item, a.Count, b.Item, b.Count) })
	return out, true
}

func compareEntries(ai string, ac uint64, bi string, bc uint64) int {
	switch {
	case ac != bc && ac > bc:
		return -1
	case ac != bc:
		return 1
	case ai < bi:
		return -1
	case ai > bi:
		return 1
	}
	return 0
}
