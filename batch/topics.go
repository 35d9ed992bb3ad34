package batch

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
	"trending/internal/topicstore"

	"trending/archive"
	"trending/internal/setting"
	"trending/model"
	"trending/model/topicrules"
	"trending/model/topk"
	"trending/serving/store"
)

// Trending topics (docs/topics.md) in the batch layer: exact per-(region, topic) hourly counts of
// closed hours, the 7-day same-hour baseline from them, and one exact list per closed hour
// and list (every configured region and world), published under the calendar key
// model.TopicsKey(list, score) with the hour as start, as source=batch.
//
// The rules reproduced exactly from the archived rows (what speed/topicrules.State.Add does,
// minus its approximations):
//   - dedupe: a (user, topic) pair counts once per aligned DedupeSlot (15 minutes) of event
//     time; the earliest mention by (ts, partition, offset) wins and decides region and
//     weight. The speed layer's table remembers a pair for 15 minutes from when it was
//     counted and can evict under a flood; the batch slot is the exact, deterministic form.
//   - weight: a mention weighs 3 tenths when account_age_days is below
//     WeightConfig.NewAccountAge, else 10 (absent age: established); an anonymous row of
//     count n weighs n times that, a row with a user counts once.
//   - blocklist: the terms of the --blocklist file (topicrules.Blocklist.Blocked: the topic or
//     any of its words, case-insensitive, leading '#' ignored) as of the run. The file's
//     bytes are part of every rollup fingerprint, so a new ban recomputes the hours.
//   - regions: a row's region counts towards that region's list when configured and always
//     towards world; "" or an unconfigured region counts towards world only.
//   - floor, score and review cut: a topic needs Surge.Floor mentions in the hour; volume
//     scores the mentions, surge SurgeRatio(mentions, expected, c) and lists a topic from
//     Surge.Enter (a closed hour has no previous list, so no hysteresis); over
//     Weight.ReviewShare of new-account weight the score is multiplied by Weight.ReviewCut
//     and the item is flagged Review.
//   - expected: the mean of the same clock hour over the BaselineDays days before, counting
//     only days whose hour holds any counted mention (as the speed layer leaves out days
//     with no hourly sketch), scaled to the one-hour window.
//
// Not reproduced: the decayed score (lists with it are not recomputed), the hysteresis
// across windows, and the never-seen-topic holds (they need a person's decision, which is
// not in the archive; TopicsConfig.Held keeps the review queue's pending and rejected
// topics off the batch lists instead). NoHistory is never set on batch items.

// TopicsRollup is the rollup level name of per-(region, topic) hours in Meta and progress
// lines.
const TopicsRollup = "topics_hour"

// TopicsConfig configures the trending-topics recompute. Start from DefaultTopicsConfig:
// NewTopics and TopicsList take every field as it is, and a zero field means zero (see
// each field).
type TopicsConfig struct {
	// Regions are the regional lists, besides world; the same set as the speed layer's
	// --topics. At least one list is always built: world.
	Regions []string
	// Scores sets each list's score by name (topicrules.World or a region); a list not in it
	// is volume. A decayed list is not recomputed (skipped with a reason).
	Scores map[string]topicrules.Score
	// Surge is the floor, c and the enter threshold; defaults c 50, floor 300, enter 3
	// (topicrules.DefaultSurgeConfig). Smoothing, Enter and Stay must be positive; Floor 0 is no
	// floor: every topic with a mention in the hour is scored.
	Surge topicrules.SurgeConfig
	// Weight is the new-account age and the review share and cut; defaults 30 days, 0.6
	// and 0.1. NewAccountAge 0 counts no account as new; the share must be in (0, 1] and the
	// cut in (0, 1).
	Weight topicrules.WeightConfig
	// DedupeSlot is the slot a (user, topic) pair counts once in; whole minutes dividing an
	// hour. Default 15 minutes (topicrules.DefaultDedupeTTL).
	DedupeSlot time.Duration
	// BaselineDays is how many past days' same hour average into expected; 1..28,
	// default 7.
	BaselineDays int
	// ListSize is the length of each list; 1..1000, default 50.
	ListSize int
	// Blocklist is the path of the blocklist file; empty blocks nothing.
	Blocklist string
	// Held, when set, keeps a topic off every batch list (the review queue's Blocks:
	// pending or rejected). Nil holds nothing.
	Held func(topic string) bool
}

// DefaultTopicsConfig returns the default settings with no regions: the one place the
// batch takes the topics defaults from (model/topicrules' constants).
func DefaultTopicsConfig() TopicsConfig {
	return TopicsConfig{
		Surge:        topicrules.DefaultSurgeConfig(),
		Weight:       topicrules.WeightConfig{NewAccountAge: topicrules.DefaultNewAccountAge, ReviewShare: topicrules.DefaultReviewShare, ReviewCut: topicrules.DefaultReviewCut},
		DedupeSlot:   topicrules.DefaultDedupeTTL,
		BaselineDays: topicrules.DefaultBaselineDays,
		ListSize:     topicrules.DefaultListSize,
	}
}

// Validate reports settings that cannot work, by field (setting.ErrConfig; nested fields
// as "Surge.Enter"), in the ranges of the speed layer where they are the same settings.
func (c TopicsConfig) Validate() error {
	d := DefaultTopicsConfig()
	var errs []error
	// The speed layer's rules for the lists (speed/topicrules.Config.Validate).
	if err := topicrules.ValidateLists(c.Regions, c.Scores); err != nil {
		errs = append(errs, fmt.Errorf("topics: %w", err))
	}
	for _, r := range c.Regions {
		if strings.Contains(r, "/") {
			errs = append(errs, setting.Invalid("Regions", "topics region %q: a region must not contain '/'", r))
		}
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	s := c.Surge
	if !(s.Smoothing > 0) || !finite(s.Smoothing) {
		errs = append(errs, setting.Invalid("Surge.Smoothing", "%v: must be a positive number (default %v)", s.Smoothing, d.Surge.Smoothing))
	}
	if !(s.Floor >= 0) || !finite(s.Floor) {
		errs = append(errs, setting.Invalid("Surge.Floor", "%v: must be zero (no floor) or more mentions (default %v)", s.Floor, d.Surge.Floor))
	}
	if !(s.Stay > 0) || !finite(s.Stay) {
		errs = append(errs, setting.Invalid("Surge.Stay", "%v: must be positive (default %v)", s.Stay, d.Surge.Stay))
	}
	if !(s.Enter >= s.Stay) || !finite(s.Enter) {
		errs = append(errs, setting.Invalid("Surge.Enter", "%v: must be at least Surge.Stay %v (default %v)", s.Enter, s.Stay, d.Surge.Enter))
	}
	w := c.Weight
	if w.NewAccountAge < 0 {
		errs = append(errs, setting.Invalid("Weight.NewAccountAge", "%s: must not be negative (0: no account is new; default %s)", w.NewAccountAge, d.Weight.NewAccountAge))
	}
	if !(w.ReviewShare > 0 && w.ReviewShare <= 1) {
		errs = append(errs, setting.Invalid("Weight.ReviewShare", "%v: must be in (0, 1] (default %v)", w.ReviewShare, d.Weight.ReviewShare))
	}
	if !(w.ReviewCut > 0 && w.ReviewCut < 1) {
		errs = append(errs, setting.Invalid("Weight.ReviewCut", "%v: must be in (0, 1) (default %v)", w.ReviewCut, d.Weight.ReviewCut))
	}
	if c.BaselineDays < 1 || c.BaselineDays > 28 {
		errs = append(errs, setting.Invalid("BaselineDays", "%d: must be 1..28 (default %d)", c.BaselineDays, d.BaselineDays))
	}
	if c.ListSize < 1 || c.ListSize > 1000 {
		errs = append(errs, setting.Invalid("ListSize", "%d: must be 1..1000 (default %d)", c.ListSize, d.ListSize))
	}
	if c.DedupeSlot < time.Minute || c.DedupeSlot%time.Minute != 0 || time.Hour%c.DedupeSlot != 0 {
		errs = append(errs, setting.Invalid("DedupeSlot", "%s: use whole minutes that divide an hour (default %s)", c.DedupeSlot, d.DedupeSlot))
	}
	return errors.Join(errs...)
}

// Lists returns the list names, world first.
func (c TopicsConfig) Lists() []string { return append([]string{topicrules.World}, c.Regions...) }

func (c TopicsConfig) score(list string) topicrules.Score {
	return cmp.Or(c.Scores[list], topicrules.Volume)
}

// TopicRules are the per-row rules of an hour rollup: what BuildTopicHours applies.
type TopicRules struct {
	Blocked       func(topic string) bool // nil blocks nothing
	NewAccountAge time.Duration
	DedupeSlot    time.Duration
}

// isNew reports whether an archived account age (days; nil when absent: established) is
// a new account's.
func (r TopicRules) isNew(days *int32) bool {
	return days != nil && time.Duration(*days)*24*time.Hour < r.NewAccountAge
}

// TopicCount is one (region, topic) of an hour rollup, in tenths of a mention.
type TopicCount struct {
	Region, Topic string
	Tenths        uint64 // counted weight
	NewTenths     uint64 // of which from new accounts
}

// TopicsEngine keeps the per-(region, topic) hour rollups. Both engines implement it:
// *Native in its bbolt file, *ClickHouse in topics_hour (schemas/clickhouse/003_topics.sql).
type TopicsEngine interface {
	// BuildTopicHours replaces the rollups of the given hours with CountTopicHour of each,
	// recording each Fingerprint, atomically per call. Calls on different UTC days may run
	// at once; calls on the same day must not.
	BuildTopicHours(ctx context.Context, src Archive, hours []Built, rules TopicRules) ([]Meta, error)
	// TopicsMeta returns what was recorded for an hour, or ErrNoRollup. Its Views is the
	// counted weight in tenths of a mention, Items the distinct (region, topic) keys and
	// InputRows the rows counted after every rule.
	TopicsMeta(ctx context.Context, hour time.Time) (Meta, error)
	// TopicCounts returns an hour's rollup sorted by (region, topic); nil when empty.
	TopicCounts(ctx context.Context, hour time.Time) ([]TopicCount, error)
}

// CountTopicHour reads one hour of the archive and applies the rules: each (partition,
// offset) once, blocked topics dropped, a (user, topic) once per slot (the earliest by
// (ts, partition, offset)), weights in tenths. It returns the counts sorted by (region,
// topic) and the number of rows counted after dedupe.
func CountTopicHour(ctx context.Context, src Archive, hour time.Time, rules TopicRules) ([]TopicCount, uint64, error) {
	type pk struct {
		p int32
		o int64
	}
	type pair struct {
		user, topic string
		slot        int64
	}
	type first struct {
		ts     int64
		p      int32
		o      int64
		region string
		new    bool
	}
	type rk struct{ region, topic string }
	slotMs := rules.DedupeSlot.Milliseconds()
	if slotMs <= 0 {
		panic("BUG: CountTopicHour without a dedupe slot")
	}
	seen := map[pk]struct{}{}
	users := map[pair]first{}
	acc := map[rk]*TopicCount{}
	add := func(region, topic string, w uint64, isNew bool) {
		k := rk{region, topic}
		c := acc[k]
		if c == nil {
			c = &TopicCount{Region: region, Topic: topic}
			acc[k] = c
		}
		c.Tenths += w
		if isNew {
			c.NewTenths += w
		}
	}
	var rows uint64
	err := src.ReadHour(ctx, hour, func(r archive.Row) error {
		k := pk{r.Partition, r.Offset}
		if _, dup := seen[k]; dup {
			return nil
		}
		seen[k] = struct{}{}
		if rules.Blocked != nil && rules.Blocked(r.ItemID) {
			return nil
		}
		isNew := rules.isNew(r.AccountAgeDays)
		if r.UserID == "" {
			rows++
			add(r.Region, r.ItemID, topicrules.Tenths(isNew)*uint64(max(r.Count, 1)), isNew)
			return nil
		}
		slot := r.TS / slotMs
		if r.TS < 0 && r.TS%slotMs != 0 {
			slot--
		}
		f := first{r.TS, r.Partition, r.Offset, r.Region, isNew}
		pr := pair{r.UserID, r.ItemID, slot}
		if cur, ok := users[pr]; !ok || cmp.Or(cmp.Compare(f.ts, cur.ts), cmp.Compare(f.p, cur.p), cmp.Compare(f.o, cur.o)) < 0 {
			users[pr] = f
		}
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("read hour %s: %w", hour.UTC().Format(time.RFC3339), err)
	}
	for pr, f := range users {
		rows++
		add(f.region, pr.topic, topicrules.Tenths(f.new), f.new)
	}
	out := make([]TopicCount, 0, len(acc))
	for _, c := range acc {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(a, b TopicCount) int {
		return cmp.Or(strings.Compare(a.Region, b.Region), strings.Compare(a.Topic, b.Topic))
	})
	return out, rows, nil
}

// Topics recomputes trending-topics lists of closed hours. It shares the Runner's archive,
// store, clock, lateness, Force, Rebuild and Parallel settings. Safe for one run at a time.
type Topics struct {
	r       *Runner
	eng     TopicsEngine
	cfg     TopicsConfig
	block   *topicrules.Blocklist
	rulesFP string
}

// NewTopics returns the recompute of cfg's lists over eng. It reads the blocklist file now;
// a later change applies to the next NewTopics (each `trending batch` run, or a restart).
func NewTopics(r *Runner, eng TopicsEngine, cfg TopicsConfig) (*Topics, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	block, err := topicstore.OpenBlocklist(cfg.Blocklist)
	if err != nil {
		return nil, setting.Invalid("Blocklist", "%v", err)
	}
	var raw []byte
	if cfg.Blocklist != "" {
		f, err := os.Open(cfg.Blocklist)
		if err != nil {
			return nil, setting.Invalid("Blocklist", "%v", err)
		}
		raw, err = io.ReadAll(io.LimitReader(f, topicrules.MaxBlocklistBytes+1))
		f.Close()
		if err != nil {
			return nil, setting.Invalid("Blocklist", "%v", err)
		}
	}
	bh := sha256.Sum256(raw)
	rules := fmt.Sprintf("topics-rules v1\nblocklist %x\nnew-account-age %d\nslot %d\n", bh, cfg.Weight.NewAccountAge, cfg.DedupeSlot)
	sum := sha256.Sum256([]byte(rules))
	return &Topics{r: r, eng: eng, cfg: cfg, block: block, rulesFP: hex.EncodeToString(sum[:])}, nil
}

func (t *Topics) rules() TopicRules {
	return TopicRules{Blocked: t.block.Blocked, NewAccountAge: t.cfg.Weight.NewAccountAge, DedupeSlot: t.cfg.DedupeSlot}
}

// hourFP is an hour rollup's fingerprint: the archive's and the rules'.
func (t *Topics) hourFP(archiveFP string) string {
	s := sha256.Sum256([]byte(archiveFP + "\n" + t.rulesFP))
	return hex.EncodeToString(s[:])
}

// baseline returns the hours an hour's list depends on: itself first, then the same hour
// of each of the BaselineDays days before.
func (t *Topics) baseline(h time.Time) []time.Time {
	out := []time.Time{h}
	for d := 1; d <= t.cfg.BaselineDays; d++ {
		out = append(out, h.Add(-time.Duration(d)*24*time.Hour))
	}
	return out
}

// topicsRun is the state of one Topics.Recompute.
type topicsRun struct {
	*run
	t      *Topics
	fps    map[time.Time]string // hour rollup fingerprints
	counts map[time.Time]hourCounts
}

type hourCounts struct {
	counts []TopicCount
	views  uint64 // total tenths: zero means no data that day
}

// NightlyHours returns the hours whose trending-topics lists a nightly pass recomputes
// (`trending batch nightly --topics`): every hour of date's UTC day (default: the day
// before now, as Runner.Nightly) and of the lookbackDays days before it, oldest first. An
// hour whose archived inputs (or whose baseline days') did not change is only checked.
func NightlyHours(date, now time.Time, lookbackDays int) ([]Window, error) {
	if date.IsZero() {
		date = now.AddDate(0, 0, -1)
	}
	from := model.Day.Align(date)
	return Span(Hour, from.AddDate(0, 0, -lookbackDays), from.AddDate(0, 0, 1))
}

// Recompute recomputes the lists of the given hours (Level Hour) for every list, building the
// hour rollups they depend on (the hour and its baseline days) whose archive fingerprint or
// rules changed, and publishing each list whose inputs changed since its batch list was
// written. An open hour fails the run before any work, unless Force.
func (t *Topics) Recompute(ctx context.Context, hours []Window) (Report, error) {
	x := &topicsRun{run: t.r.newRun(), t: t, fps: map[time.Time]string{}, counts: map[time.Time]hourCounts{}}
	for _, w := range hours {
		if w.Level != Hour {
			return x.report, fmt.Errorf("%w: topics lists are recomputed per hour, not %s", ErrBadRange, w.Level)
		}
		if !t.r.cfg.Force {
			if err := t.r.Closed(ctx, w); err != nil {
				return x.report, err
			}
		}
	}
	var need []time.Time
	for _, w := range hours {
		for _, h := range t.baseline(w.Start) {
			if !slices.ContainsFunc(need, h.Equal) {
				need = append(need, h)
			}
		}
	}
	slices.SortFunc(need, func(a, b time.Time) int { return a.Compare(b) })
	var mu sync.Mutex
	var stale []Window
	err := x.parallel(ctx, len(need), func(i int) error {
		h := need[i]
		afp, err := t.r.arc.Fingerprint(ctx, h)
		if err != nil {
			return fmt.Errorf("fingerprint of hour %s: %w", h.Format(time.RFC3339), err)
		}
		fp := t.hourFP(afp)
		build := t.r.cfg.Rebuild && slices.ContainsFunc(hours, func(w Window) bool { return w.Start.Equal(h) })
		if !build {
			m, err := t.eng.TopicsMeta(ctx, h)
			switch {
			case errors.Is(err, ErrNoRollup):
				build = true
			case err != nil:
				return err
			default:
				build = m.Fingerprint != fp
			}
		}
		mu.Lock()
		defer mu.Unlock()
		x.fps[h] = fp
		if build {
			stale = append(stale, Window{Hour, h})
		}
		return nil
	})
	if err != nil {
		return x.report, err
	}
	// One call per day: an engine may replace a day's rollups as a unit (ClickHouse swaps
	// the day's partition), so two calls on one day must not run at once.
	groups := group(stale, Day)
	err = x.parallel(ctx, len(groups), func(i int) error {
		g := groups[i]
		bs := make([]Built, len(g))
		for j, w := range g {
			bs[j] = Built{Start: w.Start, Fingerprint: x.fps[w.Start], Through: w.End()}
		}
		t0 := time.Now()
		metas, err := t.eng.BuildTopicHours(ctx, t.r.arc, bs, t.rules())
		if err != nil {
			return err
		}
		for j, b := range bs {
			w := Window{TopicsRollup, b.Start}
			x.markBuilt(w)
			x.progress("built", Outcome{Window: w, Built: true, Fingerprint: b.Fingerprint, InputRows: metas[j].InputRows,
				Items: metas[j].Items, Views: roundTenths(metas[j].Views), Took: time.Since(t0) / time.Duration(len(g))}) // in mentions
		}
		return nil
	})
	if err != nil {
		return x.report, err
	}
	for _, w := range hours {
		for _, list := range t.cfg.Lists() {
			if err := x.publishTopics(ctx, w.Start, list); err != nil {
				return x.report, err
			}
		}
	}
	return x.report, nil
}

// load returns an hour's rollup, cached for the run.
func (x *topicsRun) load(ctx context.Context, h time.Time) (hourCounts, error) {
	if c, ok := x.counts[h]; ok {
		return c, nil
	}
	cs, err := x.t.eng.TopicCounts(ctx, h)
	if err != nil {
		return hourCounts{}, err
	}
	c := hourCounts{counts: cs}
	for _, tc := range cs {
		c.views += tc.Tenths
	}
	x.counts[h] = c
	return c, nil
}

// window is the calendar window of a topics list: Level is the store window name
// "topics/<list>/<score>", Start the hour.
func (t *Topics) window(h time.Time, list string) Window {
	return Window{model.TopicsKey(list, string(t.cfg.score(list))).Name(), h}
}

// listFP is a list's input fingerprint: the list's settings and the fingerprints of the
// hour and its baseline days.
func (x *topicsRun) listFP(h time.Time, list string) string {
	c := x.t.cfg
	s := sha256.New()
	fmt.Fprintf(s, "topics-list v1\n%s %s floor %v c %v enter %v share %v cut %v size %d days %d\n", list, c.score(list),
		c.Surge.Floor, c.Surge.Smoothing, c.Surge.Enter, c.Weight.ReviewShare, c.Weight.ReviewCut, c.ListSize, c.BaselineDays)
	for _, b := range x.t.baseline(h) {
		fmt.Fprintf(s, "%s %s\n", b.UTC().Format(time.RFC3339), x.fps[b])
	}
	return hex.EncodeToString(s.Sum(nil))
}

// heldIn returns the topics of an hour's counts for list that cfg.Held keeps off it, sorted.
func heldIn(cfg TopicsConfig, list string, counts []TopicCount) []string {
	var held []string
	for _, c := range counts {
		if inList(list, c.Region) && cfg.Held(c.Topic) && !slices.Contains(held, c.Topic) {
			held = append(held, c.Topic)
		}
	}
	slices.Sort(held)
	return held
}

// heldFP folds the held topics into a list fingerprint; with none it is fp unchanged, so lists
// published before the review queue was an input stay current.
func heldFP(fp string, held []string) string {
	if len(held) == 0 {
		return fp
	}
	s := sha256.New()
	fmt.Fprintf(s, "%s\nheld", fp)
	for _, t := range held {
		fmt.Fprintf(s, " %q", t)
	}
	return hex.EncodeToString(s.Sum(nil))
}

// inList reports whether a count of region belongs to list.
func inList(list, region string) bool { return list == topicrules.World || region == list }

// TopicsList computes one exact list from the hour's counts and its baseline days' counts
// (days with no data at all passed as nil and left out of the mean). It also returns every
// topic's exact mentions in the hour, for the reconciliation. cfg is taken as it is: start
// from DefaultTopicsConfig.
func TopicsList(cfg TopicsConfig, list string, cur []TopicCount, days [][]TopicCount) ([]model.Item, map[string]uint64) {
	type acc struct{ tenths, newTenths uint64 }
	now := map[string]*acc{}
	for _, c := range cur {
		if !inList(list, c.Region) {
			continue
		}
		a := now[c.Topic]
		if a == nil {
			a = &acc{}
			now[c.Topic] = a
		}
		a.tenths += c.Tenths
		a.newTenths += c.NewTenths
	}
	var withData int
	past := map[string]uint64{} // tenths summed over the days with data
	for _, d := range days {
		if d == nil {
			continue
		}
		withData++
		for _, c := range d {
			if inList(list, c.Region) {
				if _, ok := now[c.Topic]; ok {
					past[c.Topic] += c.Tenths
				}
			}
		}
	}
	score := cfg.score(list)
	exact := make(map[string]uint64, len(now))
	var out []model.Item
	for topic, a := range now {
		exact[topic] = roundTenths(a.tenths)
		mentions := float64(a.tenths) / 10
		if mentions < cfg.Surge.Floor || (cfg.Held != nil && cfg.Held(topic)) {
			continue
		}
		var expected float64
		if withData > 0 {
			expected = float64(past[topic]) / 10 / float64(withData)
		}
		it := model.Item{ItemID: topic, Views: roundTenths(a.tenths), Exact: true, Topic: &model.Topic{Expected: expected}}
		switch score {
		case topicrules.Surge:
			it.Score = topicrules.SurgeRatio(mentions, expected, cfg.Surge.Smoothing)
			if it.Score < cfg.Surge.Enter {
				continue
			}
		default:
			it.Score = mentions
		}
		if a.tenths > 0 {
			it.NewShare = float64(a.newTenths) / float64(a.tenths)
		}
		if it.NewShare > cfg.Weight.ReviewShare {
			it.Review = true
			it.Score *= cfg.Weight.ReviewCut
		}
		out = append(out, it)
	}
	slices.SortFunc(out, func(a, b model.Item) int {
		return cmp.Or(cmp.Compare(b.Score, a.Score), strings.Compare(a.ItemID, b.ItemID))
	})
	out = out[:min(len(out), cfg.ListSize)]
	for i := range out {
		out[i].Rank = i + 1
	}
	return out, exact
}

// roundTenths rounds tenths of a mention to whole mentions, half up.
func roundTenths(t uint64) uint64 { return (t + 5) / 10 }

// publishTopics writes one list of hour h unless the store holds the batch list of the same
// inputs already.
func (x *topicsRun) publishTopics(ctx context.Context, h time.Time, list string) error {
	t0 := time.Now()
	w := x.t.window(h, list)
	if x.t.cfg.score(list) == topicrules.Decayed {
		x.note(Outcome{Window: w, Skipped: "decayed lists are not recomputed"})
		return nil
	}
	fp := x.listFP(h, list)
	if x.t.cfg.Held != nil {
		// The review queue's decisions are inputs too: a topic of this hour held or released
		// since the list was published recomputes it, so a hold reaches an exact list already
		// published and an approval lists the topic.
		c, err := x.load(ctx, h)
		if err != nil {
			return err
		}
		fp = heldFP(fp, heldIn(x.t.cfg, list, c.counts))
	}
	key := model.Key{Window: w.Level, Start: h}
	cur, err := x.store.Get(ctx, key)
	var prev *model.List
	switch {
	case err == nil:
		prev = &cur
	case !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("read current list of %s: %w", w, err)
	}
	if !x.cfg.Rebuild && prev != nil && prev.Source == model.SourceBatch && prev.Fingerprint == fp {
		x.note(Outcome{Window: w, Fingerprint: fp, Skipped: "current"})
		return nil
	}
	now, err := x.load(ctx, h)
	if err != nil {
		return err
	}
	var days [][]TopicCount
	for _, d := range x.t.baseline(h)[1:] {
		c, err := x.load(ctx, d)
		if err != nil {
			return err
		}
		if c.views > 0 {
			days = append(days, c.counts)
		} else {
			days = append(days, nil)
		}
	}
	if now.views == 0 && prev == nil {
		x.note(Outcome{Window: w, Fingerprint: fp, Skipped: "no events archived"})
		return nil
	}
	items, exact := TopicsList(x.t.cfg, list, now.counts, days)
	l := model.List{Kind: model.ListTopics, End: h.Add(time.Hour), AsOf: h.Add(time.Hour), Version: x.version,
		Source: model.SourceBatch, Status: model.StatusExact, Exact: true, ComputedAt: x.now, Fingerprint: fp, Items: items}
	l.SetKey(w.Key())
	if prev != nil {
		switch prev.Source {
		case model.SourceSpeed:
			top := make([]topk.Entry, len(items))
			for i, it := range items {
				top[i] = topk.Entry{Item: it.ItemID, Count: it.Views}
			}
			rec := Reconcile(*prev, top, exact)
			l.Reconciliation = &rec
		case model.SourceBatch:
			l.Reconciliation = prev.Reconciliation
		}
	}
	var views uint64
	for _, v := range exact {
		views += v
	}
	o := Outcome{Window: w, Built: x.built[Window{TopicsRollup, h}], Fingerprint: fp, Items: uint64(len(exact)), Views: views,
		Recon: l.Reconciliation, Took: time.Since(t0)}
	if len(items) > 0 {
		o.Top = fmt.Sprintf("%s (%.3g)", items[0].ItemID, items[0].Score)
	}
	if err := x.store.Put(ctx, l); err != nil {
		if errors.Is(err, store.ErrStaleVersion) {
			x.kept(ctx, o, l)
			return nil
		}
		return fmt.Errorf("publish %s: %w", w, err)
	}
	o.Published = true
	x.progress("published", o)
	return nil
}
