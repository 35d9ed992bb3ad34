package batch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"trending/internal/setting"
	"trending/model"
	"trending/model/moderation"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/serving/store"
)

// Config configures a Runner. Start from DefaultConfig: NewRunner takes every field as it
// is, and a zero field means zero (see each field).
type Config struct {
	// K is the length of each published list, 1..10000; default 100 (the speed layer's --k).
	K int
	// AllowedLateness is how long after a window's end events may still arrive; a window
	// is closed once its end plus this has passed and the archive says it is complete.
	// Default 10 minutes; zero closes a window at its end.
	AllowedLateness time.Duration
	// Parallel is how many days' hours are built at once, 1..64; default 1.
	Parallel int
	// Force computes open windows too (their lists are then exact for what was archived so
	// far, and the speed layer can no longer update them).
	Force bool
	// Rebuild recomputes the requested windows even when their rollups are current; windows
	// they depend on are still rebuilt only when their inputs changed.
	Rebuild bool
	// LookbackDays is how far back Nightly looks for closed windows whose inputs changed;
	// default 35 (the month before, plus a margin). Zero looks at the night's date only.
	LookbackDays int
	// Now is the clock; default time.Now. Required.
	Now func() time.Time
	// Progress receives one line per window built or published; nil for none.
	Progress io.Writer
	// Meter, when set, is called after each window of a run is published or kept, with how
	// many are done and how many the run plans (a terminal's progress bar: cmd/trending);
	// nil for none. done may pass total when a run publishes the all-time base as well.
	Meter func(done, total int, window string)
	// BaseFactor sizes the exact all-time base (model.BaseWindow): its top BaseFactor*K items,
	// so that the speed layer's merger can prove its merged all-time list exact (an item
	// outside the base has at most its cutoff). 1..100; default 10.
	BaseFactor int
	// Windows is the served window set (model/windowset): a run publishes the calendar
	// windows of its spans and the all-time list when it serves "all", and only builds the
	// rollups the others need (hours and days below a week, months below all time).
	// Default windowset.Default().
	Windows windowset.Set
	// Removed returns the items moderation removes from the served lists
	// (model/moderation), read once at the start of each run: a run ranks K plus that many
	// and drops them, so a list still holds K items, and their digest is part of each list's
	// fingerprint, so the next run after a change publishes again every list it considers
	// (the counts stay in the rollups: a restore brings an item back). nil removes nothing.
	Removed func() *moderation.Set
	// CapViews is the per-account cap (docs/moderation.md#per-account-caps): one account adds
	// at most this many views to an item per hour, as the speed workers' --cap-views; part
	// of each hour's fingerprint, so a change rebuilds. 0: no cap.
	CapViews uint32
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{K: 100, AllowedLateness: 10 * time.Minute, Parallel: 1, LookbackDays: 35, Now: time.Now, BaseFactor: 10, Windows: windowset.Default()}
}

// Validate reports settings that cannot work, by field (setting.ErrConfig; the command
// names its flags).
func (c Config) Validate() error {
	d := DefaultConfig()
	var errs []error
	if c.K < 1 || c.K > 10000 {
		errs = append(errs, setting.Invalid("K", "%d: use 1..10000 (default %d)", c.K, d.K))
	}
	if c.AllowedLateness < 0 {
		errs = append(errs, setting.Invalid("AllowedLateness", "%s: must not be negative", c.AllowedLateness))
	}
	if c.Parallel < 1 || c.Parallel > 64 {
		errs = append(errs, setting.Invalid("Parallel", "%d: use 1..64 (default %d)", c.Parallel, d.Parallel))
	}
	if c.LookbackDays < 0 {
		errs = append(errs, setting.Invalid("LookbackDays", "%d: must not be negative", c.LookbackDays))
	}
	if c.Now == nil {
		errs = append(errs, setting.Invalid("Now", "no clock: start from DefaultConfig (time.Now)"))
	}
	if c.BaseFactor < 1 || c.BaseFactor > 100 {
		errs = append(errs, setting.Invalid("BaseFactor", "%d: use 1..100 (default %d)", c.BaseFactor, d.BaseFactor))
	}
	if err := c.Windows.Validate(); err != nil {
		errs = append(errs, setting.Invalid("Windows", "%v", err))
	}
	return errors.Join(errs...)
}

// Runner plans and runs the batch: which windows, whether they are closed, what is stale,
// building and publishing. It is safe for one run at a time.
type Runner struct {
	cfg   Config
	eng   Engine
	arc   Archive
	store store.Store
	log   *slog.Logger

	mu sync.Mutex // serialises progress output
}

// NewRunner builds a Runner; cfg must Validate. log may be nil.
func NewRunner(cfg Config, eng Engine, arc Archive, st store.Store, log *slog.Logger) (*Runner, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Runner{cfg: cfg, eng: eng, arc: arc, store: st, log: log}, nil
}

// Outcome is what happened to one window's list: of every item, or of one group value
// (Group; its rollup is the window's).
type Outcome struct {
	Window      Window
	Group       string // the group value (a region) of a list per group; "" for all items
	Built       bool   // its rollup was rebuilt
	Published   bool   // its list was written to the serving store
	Skipped     string // why it was neither (current, empty, open, newer list)
	Fingerprint string
	InputRows   uint64
	Items       uint64
	Views       uint64
	Top         string // the top item, for the progress line
	Recon       *model.Reconciliation
	Took        time.Duration
}

// Report is the result of one run.
type Report struct {
	Version  int64 // the version of every list published (run time, Unix ms)
	Outcomes []Outcome
}

// Published counts the lists written, group values' included.
func (r Report) Published() int {
	n := 0
	for _, o := range r.Outcomes {
		if o.Published {
			n++
		}
	}
	return n
}

// run is the state of one invocation.
type run struct {
	*Runner
	version int64
	now     time.Time
	closed  time.Time // every hour before this is closed (end + lateness passed)
	removed *moderation.Set
	rebuild map[Window]bool

	mu      sync.Mutex
	hourFP  map[time.Time]string
	report  Report
	built   map[Window]bool
	nDone   int
	nPlaned int
	started time.Time // the wall clock at the run's start, for the progress lines' ETA
}

func (r *Runner) newRun() *run {
	now := r.cfg.Now().UTC()
	return &run{Runner: r, version: now.UnixMilli(), now: now, closed: now.Add(-r.cfg.AllowedLateness).Truncate(time.Hour),
		rebuild: map[Window]bool{}, hourFP: map[time.Time]string{}, built: map[Window]bool{}, report: Report{Version: now.UnixMilli()},
		started: time.Now(), removed: r.removed()}
}

// removed is the set Config.Removed returns now (nil: nothing removed).
func (r *Runner) removed() *moderation.Set {
	if r.cfg.Removed == nil {
		return nil
	}
	return r.cfg.Removed()
}

// listFP is the fingerprint a list of inputs fp is published with: fp, and the digest of the
// removed items when there are any, so a change of moderation makes the list not current.
func (x *run) listFP(fp string) string {
	if d := x.removed.Digest(); d != "" {
		return fp + "+removed:" + d
	}
	return fp
}

// Closed reports why w is still open, or nil: its end plus the allowed lateness must have
// passed and the archive must be complete through its last hour.
func (r *Runner) Closed(ctx context.Context, w Window) error {
	if w.Level == All {
		return nil
	}
	if err := r.retained(ctx, w); err != nil {
		return err
	}
	now := r.cfg.Now().UTC()
	closesAt := w.End().Add(r.cfg.AllowedLateness)
	if now.Before(closesAt) {
		return fmt.Errorf("%s closes at %s (its end plus --lateness %s): %w; use --force to compute it from what is archived so far",
			w, closesAt.Format(time.RFC3339), r.cfg.AllowedLateness, ErrWindowOpen)
	}
	why, err := r.arc.Incomplete(ctx, w.End().Add(-time.Hour), r.cfg.AllowedLateness)
	if err != nil {
		return fmt.Errorf("%s: ask the archive whether it is complete: %w", w, err)
	}
	if why != "" {
		return fmt.Errorf("%s: the archive is not complete through %s yet: %s: %w; use --force to compute it anyway",
			w, w.End().Format(time.RFC3339), why, ErrWindowOpen)
	}
	return nil
}

// expirer is an archive with a retention (*archive.Reader): it says why an hour's events
// are gone. An archive without one keeps everything.
type expirer interface {
	Expired(ctx context.Context, hour, now time.Time) (string, error)
}

// retained refuses a window whose first hour is past the archive's retention (ErrWindowExpired):
// recomputing it from what is left would publish a wrong list over a right one.
func (r *Runner) retained(ctx context.Context, w Window) error {
	e, ok := r.arc.(expirer)
	if !ok || !model.Period(w.Level).Valid() { // all time sums what the rollups keep
		return nil
	}
	why, err := e.Expired(ctx, w.Start, r.cfg.Now())
	if err != nil {
		return fmt.Errorf("%s: %w", w, err)
	}
	if why != "" {
		return fmt.Errorf("%s: %s; its published list stays: %w", w, why, ErrWindowExpired)
	}
	return nil
}

// Recompute is a one-shot job (Schedule is the long-running role around it): it recomputes
// the given windows (smallest level first) and publishes their lists. An open window fails
// the whole run before any work, unless Force.
func (r *Runner) Recompute(ctx context.Context, windows []Window) (Report, error) {
	x := r.newRun()
	for _, w := range windows {
		if !r.cfg.Force {
			if err := r.Closed(ctx, w); err != nil {
				return x.report, err
			}
		} else if err := r.retained(ctx, w); err != nil { // --force cannot bring expired events back
			return x.report, err
		}
	}
	if r.cfg.Rebuild {
		for _, w := range windows {
			x.rebuild[w] = true
		}
	}
	byLevel := map[string][]Window{}
	for _, w := range windows {
		byLevel[w.Level] = append(byLevel[w.Level], w)
	}
	x.nPlaned = len(windows)
	for _, lv := range Levels {
		ws := byLevel[lv]
		if len(ws) == 0 {
			continue
		}
		fps, err := x.ensure(ctx, lv, ws)
		if err != nil {
			return x.report, err
		}
		for i, w := range ws {
			if err := x.publish(ctx, w, fps[i], true); err != nil {
				return x.report, err
			}
		}
	}
	return x.report, nil
}

// Nightly is what cron runs after midnight UTC: the hours and the day of date (default
// yesterday), the month to date (its rollup; its list once the month has closed), all
// time, and every earlier closed hour and day within LookbackDays whose archived inputs
// changed since they were built (late data), with the months above them.
func (r *Runner) Nightly(ctx context.Context, date time.Time) (Report, error) {
	x := r.newRun()
	if date.IsZero() {
		date = x.now.AddDate(0, 0, -1)
	}
	day := model.Day.Align(date)
	if !r.cfg.Force {
		if err := r.Closed(ctx, Window{Day, day}); err != nil {
			return x.report, err
		}
	}
	first := day.AddDate(0, 0, -r.cfg.LookbackDays)
	days, _ := Span(Day, first, day.AddDate(0, 0, 1))
	months, _ := Span(Month, first, day.AddDate(0, 0, 1))
	x.nPlaned = 1 + len(months) // all time, the months
	for _, d := range days {
		x.nPlaned += 1 + len(d.Hours(time.Time{}))
	}
	fps, err := x.ensure(ctx, Day, days)
	if err != nil {
		return x.report, err
	}
	// Publish the day and its hours always; earlier ones when they changed (or were never
	// published).
	for i, d := range days {
		for _, h := range d.Hours(time.Time{}) {
			if err := x.publish(ctx, h, x.fp(h.Start), d.Start.Equal(day)); err != nil {
				return x.report, err
			}
		}
		if err := x.publish(ctx, d, fps[i], d.Start.Equal(day)); err != nil {
			return x.report, err
		}
	}
	if r.cfg.Windows.HasCalendar(model.Week) {
		// The weeks that ended in the lookback: the night's date's when it is a Sunday,
		// earlier ones when their days changed (or were never published).
		weeks, _ := Span(Week, first, day.AddDate(0, 0, 1))
		var closed []Window
		for _, w := range weeks {
			if !w.End().After(day.AddDate(0, 0, 1)) {
				closed = append(closed, w)
			}
		}
		x.nPlaned += len(closed)
		wfps, err := x.ensure(ctx, Week, closed)
		if err != nil {
			return x.report, err
		}
		for i, w := range closed {
			if err := x.publish(ctx, w, wfps[i], w.End().Equal(day.AddDate(0, 0, 1))); err != nil {
				return x.report, err
			}
		}
	}
	mfps, err := x.ensure(ctx, Month, months)
	if err != nil {
		return x.report, err
	}
	for i, m := range months {
		if m.End().After(day.AddDate(0, 0, 1)) {
			x.note(Outcome{Window: m, Built: x.built[m], Fingerprint: mfps[i], Skipped: "month to date: rollup only, list when the month closes"})
			continue
		}
		if err := x.publish(ctx, m, mfps[i], false); err != nil {
			return x.report, err
		}
	}
	all := Window{Level: All}
	afps, err := x.ensure(ctx, All, []Window{all})
	if err != nil {
		return x.report, err
	}
	return x.report, x.publish(ctx, all, afps[0], false)
}

// RecomputeDirty recomputes every closed hour that received events after the archive's progress
// had passed it (the archive's late-data markers), with the closed day and month holding it
// and the all-time list, then clears the markers it acted on. Only rollups whose inputs
// changed are rebuilt; each list is published with a new version and its reconciliation
// against the speed list it once replaced is recomputed. A marked hour that is not closed
// yet keeps its marker: its own run will see the events. No marker: nothing to do.
func (r *Runner) RecomputeDirty(ctx context.Context) (Report, error) {
	marks, err := r.arc.Dirty(ctx)
	if err != nil {
		return Report{}, err
	}
	keysOf := map[time.Time][]string{}
	for _, m := range marks {
		keysOf[m.Hour] = append(keysOf[m.Hour], m.Key)
	}
	hours := make([]time.Time, 0, len(keysOf))
	for h := range keysOf {
		hours = append(hours, h)
	}
	slices.SortFunc(hours, time.Time.Compare)
	var windows []Window
	var keys []string
	seen := map[Window]bool{}
	add := func(w Window) {
		if !seen[w] && r.Closed(ctx, w) == nil {
			windows = append(windows, w)
		}
		seen[w] = true
	}
	for _, h := range hours {
		if r.Closed(ctx, Window{Hour, h}) != nil {
			continue
		}
		keys = append(keys, keysOf[h]...)
		for _, p := range model.Periods {
			add(Window{string(p), p.Align(h)})
		}
	}
	if len(windows) == 0 {
		return Report{}, nil
	}
	windows = append(windows, Window{Level: All})
	rep, err := r.Recompute(ctx, windows)
	if err != nil {
		return rep, err
	}
	return rep, r.arc.ClearDirty(ctx, keys)
}

// fp returns the archive fingerprint of an hour, cached for the run.
func (x *run) fp(hour time.Time) string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.hourFP[hour]
}

// hourFingerprints asks the archive for the fingerprints of hours not yet known.
func (x *run) hourFingerprints(ctx context.Context, hours []Window) error {
	return x.parallel(ctx, len(hours), func(i int) error {
		h := hours[i].Start
		if x.fp(h) != "" {
			return nil
		}
		fp, err := x.arc.Fingerprint(ctx, h)
		if err != nil {
			return err
		}
		if g := x.cfg.Windows.Groups; g.On() {
			// The rollup holds these group values' rows too: other groups make other rollups.
			fp += ";groups=" + g.Kept()
		}
		if n := x.cfg.CapViews; n > 0 {
			// Capped counts are other rollups.
			fp += ";cap=" + strconv.FormatUint(uint64(n), 10)
		}
		x.mu.Lock()
		x.hourFP[h] = fp
		x.mu.Unlock()
		return nil
	})
}

// parallel runs fn(0..n-1) at most Parallel at a time and returns the first error.
func (x *run) parallel(ctx context.Context, n int, fn func(i int) error) error {
	sem := make(chan struct{}, x.cfg.Parallel)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := range n {
		if ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := fn(i); err != nil {
				once.Do(func() { first = err })
			}
		}()
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// through is where a window's inputs end: its end, or for an open window (the month to
// date, a forced run) the last closed hour.
func (x *run) through(w Window) time.Time {
	end := w.End()
	if x.cfg.Force || !end.After(x.closed) {
		if x.cfg.Force && end.After(x.now) {
			return x.now.Truncate(time.Hour).Add(time.Hour)
		}
		return end
	}
	t := x.closed
	if p, ok := model.Period(w.Level).Parts(); ok {
		t = p.Align(x.closed) // whole days of a week or a month (x.closed is a whole hour)
	}
	if t.Before(w.Start) {
		return w.Start
	}
	return t
}

// stale reports whether w's rollup must be rebuilt for inputs fingerprinted fp.
func (x *run) stale(ctx context.Context, level string, w Window, fp string, through time.Time) (bool, error) {
	if x.rebuild[w] {
		return true, nil
	}
	m, err := x.eng.Meta(ctx, level, w.Start)
	if errors.Is(err, ErrNoRollup) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return m.Fingerprint != fp || !m.Through.Equal(through), nil
}

// ensure makes the rollups of ws (all of one level) current, building the levels below
// first, and returns each one's input fingerprint. Which way is the level's row's (level.go):
// all time sums every month, a level without a rollup of its own sums its parts', the hour
// reads the archive, the others sum the level below.
func (x *run) ensure(ctx context.Context, level string, ws []Window) ([]string, error) {
	l := levelOf(level)
	switch {
	case l.period == "":
		return x.ensureAllTime(ctx)
	case !l.own:
		return x.ensureSummed(ctx, l, ws)
	case l.fromArchive():
		return x.ensureHours(ctx, ws)
	}
	return x.ensureRollups(ctx, l, ws)
}

// ensureHours builds the hour rollups of ws whose archive fingerprint or end changed, in
// parallel by day, and returns each hour's archive fingerprint.
func (x *run) ensureHours(ctx context.Context, ws []Window) ([]string, error) {
	if err := x.hourFingerprints(ctx, ws); err != nil {
		return nil, err
	}
	var stale []Window
	for _, w := range ws {
		s, err := x.stale(ctx, Hour, w, x.fp(w.Start), w.End())
		if err != nil {
			return nil, err
		}
		if s {
			stale = append(stale, w)
		}
	}
	groups := group(stale, levelOf(Hour).buildIn)
	if err := x.parallel(ctx, len(groups), func(i int) error { return x.buildHours(ctx, groups[i]) }); err != nil {
		return nil, err
	}
	fps := make([]string, len(ws))
	for i, w := range ws {
		fps[i] = x.fp(w.Start)
	}
	return fps, nil
}

// buildHours builds the hour rollups g, all of one day, in one engine call.
func (x *run) buildHours(ctx context.Context, g []Window) error {
	bs := make([]Built, len(g))
	for j, w := range g {
		bs[j] = Built{Start: w.Start, Fingerprint: x.fp(w.Start), Through: w.End(), Groups: x.cfg.Windows.Groups, Cap: x.cfg.CapViews}
	}
	t0 := time.Now()
	metas, err := x.eng.BuildHours(ctx, x.arc, model.Day.Align(g[0].Start), bs)
	if err != nil {
		return err
	}
	for j, w := range g {
		x.markBuilt(w)
		x.progress("built", Outcome{Window: w, Built: true, Fingerprint: bs[j].Fingerprint, InputRows: metas[j].InputRows,
			Items: metas[j].Items, Views: metas[j].Views, Took: time.Since(t0) / time.Duration(len(g))})
	}
	return nil
}

// ensureRollups makes the day or month rollups of ws current: the level below first (its
// period's parts: hours for days, days for months), then each window whose combined input
// fingerprint or through changed, rebuilt per the level's buildIn (days by month, months by
// year). It returns each window's combined fingerprint.
func (x *run) ensureRollups(ctx context.Context, l level, ws []Window) ([]string, error) {
	below, _ := l.period.Parts()
	// Children of every window, in one call so the level below is built in bulk.
	var kids []Window
	span := make([][2]int, len(ws))
	for i, w := range ws {
		ch := w.Children(x.through(w))
		span[i] = [2]int{len(kids), len(kids) + len(ch)}
		kids = append(kids, ch...)
	}
	kfps, err := x.ensure(ctx, string(below), kids)
	if err != nil {
		return nil, err
	}
	fps := make([]string, len(ws))
	var stale []Built
	for i, w := range ws {
		fps[i] = Combine(kids[span[i][0]:span[i][1]], kfps[span[i][0]:span[i][1]])
		th := x.through(w)
		s, err := x.stale(ctx, l.name, w, fps[i], th)
		if err != nil {
			return nil, err
		}
		if s {
			stale = append(stale, Built{Start: w.Start, Fingerprint: fps[i], Through: th})
		}
	}
	if err := x.buildRollups(ctx, l, stale); err != nil {
		return nil, err
	}
	return fps, nil
}

// ensureSummed makes the rollups of the parts of ws current (a week's days) and returns each
// window's combined fingerprint: its level has no rollup of its own (the engines sum its
// parts', level.span).
func (x *run) ensureSummed(ctx context.Context, l level, ws []Window) ([]string, error) {
	var kids []Window
	span := make([][2]int, len(ws))
	for i, w := range ws {
		ch := w.Children(x.through(w))
		span[i] = [2]int{len(kids), len(kids) + len(ch)}
		kids = append(kids, ch...)
	}
	kfps, err := x.ensure(ctx, l.sums, kids)
	if err != nil {
		return nil, err
	}
	fps := make([]string, len(ws))
	for i := range ws {
		fps[i] = Combine(kids[span[i][0]:span[i][1]], kfps[span[i][0]:span[i][1]])
	}
	return fps, nil
}

// buildRollups builds the stale rollups of l (days or months), one engine call per l's
// buildIn (a month of days, a year of months).
func (x *run) buildRollups(ctx context.Context, l level, stale []Built) error {
	for _, g := range groupBuilt(stale, l.buildIn) {
		t0 := time.Now()
		if err := l.build(ctx, x.eng, g[0].Start, g); err != nil {
			return err
		}
		for _, b := range g {
			w := Window{l.name, b.Start}
			x.markBuilt(w)
			x.progress("built", Outcome{Window: w, Built: true, Fingerprint: b.Fingerprint, Took: time.Since(t0) / time.Duration(len(g))})
		}
	}
	return nil
}

// ensureAllTime makes the month to date current and returns the all-time fingerprint: the
// combination of every month rolled up, since all time sums them.
func (x *run) ensureAllTime(ctx context.Context) ([]string, error) {
	cur := Window{Month, model.Month.Align(x.closed.Add(-time.Nanosecond))}
	if _, err := x.ensure(ctx, Month, []Window{cur}); err != nil {
		return nil, err
	}
	months, err := x.eng.Months(ctx)
	if err != nil {
		return nil, err
	}
	mws := make([]Window, len(months))
	mfps := make([]string, len(months))
	for i, m := range months {
		mws[i] = Window{Month, m}
		meta, err := x.eng.Meta(ctx, Month, m)
		if err != nil {
			return nil, err
		}
		mfps[i] = meta.Fingerprint
	}
	return []string{Combine(mws, mfps)}, nil
}

func (x *run) markBuilt(w Window) {
	x.mu.Lock()
	x.built[w] = true
	x.mu.Unlock()
}

// group splits windows by the parent window holding them, in start order.
func group(ws []Window, parent string) [][]Window {
	sort.Slice(ws, func(i, j int) bool { return ws[i].Start.Before(ws[j].Start) })
	var out [][]Window
	for _, w := range ws {
		if n := len(out); n > 0 && sameParent(out[n-1][0].Start, w.Start, parent) {
			out[n-1] = append(out[n-1], w)
		} else {
			out = append(out, []Window{w})
		}
	}
	return out
}

func groupBuilt(bs []Built, parent string) [][]Built {
	slices.SortFunc(bs, func(a, b Built) int { return a.Start.Compare(b.Start) })
	var out [][]Built
	for _, b := range bs {
		if n := len(out); n > 0 && sameParent(out[n-1][0].Start, b.Start, parent) {
			out[n-1] = append(out[n-1], b)
		} else {
			out = append(out, []Built{b})
		}
	}
	return out
}

// publish writes w's exact list, and those of the group values with lists (a calendar
// window's), unless the store already holds the batch list of the same inputs (always when
// force). Against a speed list it computes the reconciliation; a rerun keeps the
// reconciliation of the first exact run.
func (x *run) publish(ctx context.Context, w Window, fp string, force bool) error {
	if !slices.Contains(ServedLevels(x.cfg.Windows), w.Level) {
		x.note(Outcome{Window: w, Fingerprint: fp, Skipped: "not a served window (rollup only)"})
		return nil
	}
	if w.Level == All {
		if err := x.publishBase(ctx, fp); err != nil {
			return err
		}
	}
	if err := x.publishList(ctx, w, "", fp, force); err != nil {
		return err
	}
	g := x.cfg.Windows.Groups
	if !g.On() || w.Level == All {
		// The all-time list per group value is the speed layer's: the batch's exact base and
		// hybrid are of all items only.
		return nil
	}
	vals, err := x.eng.Groups(ctx, w.Level, w.Start)
	if err != nil {
		return err
	}
	if g.Every && len(vals) > g.Max {
		x.log.Info("batch: more group values than --groups-max have views in the window: publishing the ones with the most",
			"window", w.String(), "values", len(vals), "max", g.Max, "first_dropped", vals[g.Max].Group)
		vals = vals[:g.Max]
	}
	for _, v := range vals {
		if !g.Accepts(v.Group) {
			continue // kept by a run under other groups: its rollup is rebuilt before it counts
		}
		if err := x.publishList(ctx, w, v.Group, fp, force); err != nil {
			return err
		}
	}
	return nil
}

// publishList writes the exact list of w of every item (group "") or of one group value.
func (x *run) publishList(ctx context.Context, w Window, group string, fp string, force bool) error {
	t0 := time.Now()
	force = force || x.rebuild[w] || x.built[w]
	key := w.Key()
	key.Group = group
	cur, err := x.store.Get(ctx, key)
	var prev *model.List
	switch {
	case err == nil:
		prev = &cur
	case !errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("read current list of %s: %w", w, err)
	}
	if !force && prev != nil && prev.Source == model.SourceBatch && prev.Fingerprint == x.listFP(fp) {
		x.note(Outcome{Window: w, Group: group, Fingerprint: fp, Skipped: "current"})
		return nil
	}
	level := w.Level
	top, views, items, err := x.eng.TopK(ctx, level, w.Start, group, x.removed.Want(x.cfg.K))
	if err != nil {
		return err
	}
	top = moderation.Top(top, x.removed, x.cfg.K, func(r topk.Entry) string { return r.Item })
	if views == 0 && (prev == nil || w.Level == All) {
		// An empty all-time list would only hide the speed layer's.
		x.note(Outcome{Window: w, Group: group, Fingerprint: fp, Skipped: "no events archived"})
		return nil
	}
	l := model.List{Kind: model.ListItems, Version: x.version, Source: model.SourceBatch,
		Status: model.StatusExact, Exact: true, ComputedAt: x.now, Fingerprint: x.listFP(fp), Items: make([]model.Item, len(top))}
	l.SetKey(key)
	if w.Level != All {
		l.End = w.End()
		l.AsOf = x.through(w)
	} else if ms, err := x.eng.Months(ctx); err == nil && len(ms) > 0 {
		if m, err := x.eng.Meta(ctx, Month, ms[len(ms)-1]); err == nil {
			l.AsOf = m.Through
		}
	}
	// A list is never as of a time that has not come yet: a forced run reads an open window
	// through the end of the current hour (the rollup's bound), but the archive holds nothing
	// after now.
	if l.AsOf.After(x.now) {
		l.AsOf = x.now
	}
	if w.Level == All {
		// The live all-time list is a live key: the newest as-of wins there. The exact list is
		// as of the end of the last rolled-up month, so it serves until the speed layer
		// publishes a fresher (approximate) one, instead of hiding it for a day behind a
		// run-time version.
		if l.AsOf.IsZero() {
			x.note(Outcome{Window: w, Fingerprint: fp, Skipped: "no month rolled up"})
			return nil
		}
		l.Version = l.AsOf.UnixMilli()
	}
	for i, t := range top {
		l.Items[i] = model.Item{Rank: i + 1, ItemID: t.Item, Views: t.Count, Exact: true}
	}
	if prev != nil {
		// Against the speed list it replaces, or, on a recompute (late data), against the
		// speed list the first exact run replaced, with the new exact counts.
		speed := prev
		if prev.Source == model.SourceBatch {
			speed = nil
			if prev.Reconciliation != nil && len(prev.SpeedItems) > 0 {
				sl := replacedSpeed(*prev)
				speed = &sl
			} else {
				l.Reconciliation = prev.Reconciliation
			}
		}
		if speed != nil {
			ids := make([]string, len(speed.Items))
			for i, it := range speed.Items {
				ids[i] = it.ItemID
			}
			exactOf, err := x.eng.Counts(ctx, level, w.Start, group, ids)
			if err != nil {
				return err
			}
			rec := Reconcile(*speed, top, exactOf)
			l.Reconciliation, l.SpeedItems = &rec, speedItems(*speed)
		}
	}
	o := Outcome{Window: w, Group: group, Built: x.built[w], Fingerprint: fp, Items: items, Views: views, Recon: l.Reconciliation, Took: time.Since(t0)}
	if len(top) > 0 {
		o.Top = fmt.Sprintf("%s (%d)", top[0].Item, top[0].Count)
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

// sameCounts reports whether two lists rank the same items with the same counts, whatever
// metadata the store attached to either (store.WithTitles titles a list as it is written).
func sameCounts(a, b []model.Item) bool {
	return slices.EqualFunc(a, b, func(x, y model.Item) bool {
		return x.Rank == y.Rank && x.ItemID == y.ItemID && x.Views == y.Views && x.Exact == y.Exact
	})
}

// Reasons a batch list the store refused as stale (ErrStaleVersion) was not published.
const (
	KeptSpeed = "the speed layer's newer list is kept"
	KeptBatch = "a newer batch run already published it"
)

// kept records that the store kept its newer list over l, saying whose: on a live key (the
// all-time list) the speed layer's list as of later wins over the batch's exact one, which
// is not another batch run's doing.
func (x *run) kept(ctx context.Context, o Outcome, l model.List) {
	o.Skipped = KeptBatch
	args := []any{"window", o.Window.String(), "group", o.Group, "version", l.Version, "as_of", l.AsOf}
	if cur, err := x.store.Get(ctx, l.Key()); err != nil {
		o.Skipped = "the serving store holds a newer list"
		args = append(args, "err", err)
	} else {
		if cur.Source == model.SourceSpeed {
			o.Skipped = KeptSpeed
		}
		args = append(args, "kept_source", cur.Source, "kept_version", cur.Version, "kept_as_of", cur.AsOf)
	}
	x.log.Info("batch list not published: "+o.Skipped, args...)
	x.mu.Lock()
	defer x.mu.Unlock()
	x.record(o)
	x.meter(o)
	if x.cfg.Progress != nil {
		done := ""
		if o.Group == "" {
			done = x.done()
		}
		fmt.Fprintf(x.cfg.Progress, "batch: %-9s %-18s %s%s\n", "kept", o.name(), o.Skipped, done)
	}
}

// done is " [n/N windows, eta D]": the windows done of the run's, and the time left at the
// run's pace so far (none once the last is done); x.mu is held.
func (x *run) done() string {
	total := max(x.nPlaned, x.nDone)
	s := fmt.Sprintf(" [%d/%d windows", x.nDone, total)
	if x.nDone > 0 && total > x.nDone {
		left := time.Since(x.started) / time.Duration(x.nDone) * time.Duration(total-x.nDone)
		s += fmt.Sprintf(", eta %s", left.Round(time.Second))
	}
	return s + "]"
}

// name is the outcome's window, with its group value: "hour 2026-11-14T10Z", "hour
// 2026-11-14T10Z eu".
func (o Outcome) name() string {
	if o.Group == "" {
		return o.Window.String()
	}
	return o.Window.String() + " " + o.Group
}

// meter counts one window done and tells Config.Meter (a group value's list is part of its
// window's); x.mu is held.
func (x *run) meter(o Outcome) {
	if o.Group != "" {
		return
	}
	w := o.Window
	x.nDone++
	if x.cfg.Meter != nil {
		x.cfg.Meter(x.nDone, max(x.nPlaned, x.nDone), w.String())
	}
}

// note records an outcome without a progress line.
func (x *run) note(o Outcome) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.record(o)
	x.meter(o)
}

// record merges o into the window's outcome, so a report has one outcome per window.
// x.mu must be held.
func (x *run) record(o Outcome) {
	for i := range x.report.Outcomes {
		p := &x.report.Outcomes[i]
		if p.Window != o.Window || p.Group != o.Group {
			continue
		}
		p.Built = p.Built || o.Built
		p.Published = p.Published || o.Published
		if o.Published || p.Skipped == "" {
			p.Skipped = o.Skipped
		}
		if o.Published {
			p.Skipped = ""
		}
		p.Fingerprint = cmp.Or(o.Fingerprint, p.Fingerprint)
		p.InputRows = max(p.InputRows, o.InputRows)
		p.Items, p.Views = cmp.Or(o.Items, p.Items), cmp.Or(o.Views, p.Views)
		p.Top = cmp.Or(o.Top, p.Top)
		if o.Recon != nil {
			p.Recon = o.Recon
		}
		p.Took += o.Took
		return
	}
	x.report.Outcomes = append(x.report.Outcomes, o)
}

// progress records an outcome and prints its line.
func (x *run) progress(what string, o Outcome) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.record(o)
	if what == "published" {
		x.meter(o)
	}
	// A line a log keeps: the window, its events and their rate, its list, and once it is
	// published the windows done of the run's and the time left at its pace so far.
	line := fmt.Sprintf("batch: %-9s %-18s", what, o.name())
	if o.InputRows > 0 {
		line += fmt.Sprintf(" %d events", o.InputRows)
		if o.Took > 0 {
			line += fmt.Sprintf(" (%.0f/s)", float64(o.InputRows)/o.Took.Seconds())
		}
	}
	if o.Items > 0 {
		line += fmt.Sprintf(" %d items %d views", o.Items, o.Views)
	}
	if o.Top != "" {
		line += " top " + o.Top
	}
	if o.Recon != nil {
		line += fmt.Sprintf(" recall@k %.3f max-abs-err %d", o.Recon.RecallAtK, o.Recon.MaxAbsError)
		if b := o.Recon.SpeedErrorBound; b != nil {
			line += fmt.Sprintf(" (bound %.0f)", b.MaxOvercount)
		}
	}
	line += fmt.Sprintf(" %s", o.Took.Round(time.Millisecond))
	if what == "published" && o.Group == "" {
		line += x.done()
	}
	x.log.Debug("batch window", "what", what, "window", o.Window.String(), "group", o.Group, "events", o.InputRows, "items", o.Items, "took", o.Took)
	if x.cfg.Progress != nil {
		fmt.Fprintln(x.cfg.Progress, line)
	}
}

// publishBase writes the exact all-time base (model.BaseWindow): the sum of every month
// rolled up, which ends at the boundary B where the newest month's rollup ends (the month to
// date stops at a UTC day start). It is published only when B is provably a clean cut: every
// earlier month is rolled up whole and without a gap, B is a UTC day start, and the day
// before B is closed and complete (Closed, whatever Force says: the base claims exactness).
// The list is the top BaseFactor*K with the cutoff, the views of the next item: no item
// outside the list has more.
func (x *run) publishBase(ctx context.Context, fp string) error {
	t0 := time.Now()
	skip := func(w Window, why string) error {
		x.note(Outcome{Window: w, Fingerprint: fp, Skipped: why})
		return nil
	}
	months, err := x.eng.Months(ctx)
	if err != nil {
		return err
	}
	if len(months) == 0 {
		return skip(Window{Level: model.BaseWindow}, "no month rolled up")
	}
	var b time.Time
	for i, m := range months {
		meta, err := x.eng.Meta(ctx, Month, m)
		if err != nil {
			return err
		}
		end := model.Month.Next(m)
		if i < len(months)-1 && (!meta.Through.Equal(end) || !months[i+1].Equal(end)) {
			return skip(Window{Level: model.BaseWindow}, fmt.Sprintf("month %s is rolled up through %s only, or the next month is missing: no clean boundary",
				m.Format("2006-01"), meta.Through.Format(time.RFC3339)))
		}
		b = meta.Through
	}
	w := Window{Level: model.BaseWindow, Start: b}
	if !model.Day.Aligned(b) {
		return skip(w, "the month rollups end inside a day (a forced run): no day boundary")
	}
	if err := x.Closed(ctx, Window{Day, b.AddDate(0, 0, -1)}); err != nil {
		if errors.Is(err, ErrWindowOpen) {
			return skip(w, "the day before the boundary is not closed and complete")
		}
		return err
	}
	n := x.cfg.BaseFactor * x.cfg.K
	top, views, items, err := x.eng.TopK(ctx, All, time.Time{}, "", n+1)
	if err != nil {
		return err
	}
	if views == 0 {
		return skip(w, "no events archived")
	}
	l := model.List{Kind: model.ListSince, Window: model.BaseWindow, AsOf: b, Boundary: b, Version: x.version, Source: model.SourceBatch, Status: model.StatusExact, Exact: true,
		ComputedAt: x.now, Fingerprint: fp}
	if len(top) > n {
		l.Cutoff, top = top[n].Count, top[:n]
	}
	l.Items = make([]model.Item, len(top))
	for i, t := range top {
		l.Items[i] = model.Item{Rank: i + 1, ItemID: t.Item, Views: t.Count, Exact: true}
	}
	if cur, err := x.store.Get(ctx, model.Key{Window: model.BaseWindow}); err == nil && cur.Boundary.Equal(b) && cur.Cutoff == l.Cutoff && sameCounts(cur.Items, l.Items) {
		return skip(w, "current")
	} else if err != nil && !errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("read current %s list: %w", model.BaseWindow, err)
	}
	o := Outcome{Window: w, Fingerprint: fp, Items: items, Views: views, Took: time.Since(t0)}
	if len(top) > 0 {
		o.Top = fmt.Sprintf("%s (%d)", top[0].Item, top[0].Count)
	}
	if err := x.store.Put(ctx, l); err != nil {
		if errors.Is(err, store.ErrStaleVersion) {
			o.Skipped = "a newer batch run already published it"
			x.note(o)
			return nil
		}
		return fmt.Errorf("publish %s: %w", model.BaseWindow, err)
	}
	o.Published = true
	x.progress("published", o)
	return nil
}
