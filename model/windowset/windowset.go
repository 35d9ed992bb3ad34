// Package windowset is the one definition of the windows a deployment serves, read by every
// role: the speed workers count them, the merger and the batch publish them, the serving
// store's writers and the API accept exactly their names (and refuse others with the list),
// the dashboard builds its pickers from them and `trending plan` sizes them.
//
// A window is live (a sliding window "the last hour up to now", all time, or a decayed
// window, "trending now", where every view counts 2^(-age/half-life)), served under its name,
// or calendar (aligned UTC hours, days, ISO weeks or months), served under its span with a
// start. The set comes from a spec string (Parse), a YAML file (ParseYAML) or a preset
// (Preset); Default is the set the system always had.
//
// In detail (DESIGN.md's file map has the line): the one definition of the served windows
// every role reads (`--window-set` spec, `--window-preset` `default`/`seed-004`,
// `--windows-file` YAML, parsed in `cmd/trending/windowsflags.go` for speed, merge, serve,
// batch, up and plan): each window's name, kind (sliding, calendar, all time, decayed with
// its half-life), length and bucket or calendar span, mode; the live names, calendar spans
// and aliases (`1h`, `24h`: the sliding window of that length) the API accepts, `Describe`
// for the 400 that lists them, `AcceptsKey` for the merger's and the cache's gate.
// `Default()` is the set the system always had; `Kind` and `Mode` (with `Modes`: a new
// mode is one constant and one entry) are the one window vocabulary: the speed core's
// `WindowConfig`, the plan, the accuracy harness and the API's `/v1/windows/config` use
// them, and `window.FromSet` copies a set's windows with nothing to translate; the speed
// core counts a calendar window as `calendar-SPAN` (`window.CalendarName`), so
// `window.FromSet(Default())` is `window.DefaultWindows()` and checkpoints restore
// (`TestDefaultWindowSetIsTheSpeedDefault`, `TestFromSet`). gopkg.in/yaml.v3 (already a
// dependency) reads the file, unknown keys refused; `groups.go`: the lists per group value
// (`Groups`: the dimension, `--group-by region`, and `--groups eu,us,apac`, or `'*'` for
// every value seen up to `--groups-max`; also the windows file's `groups:`), which
// `AcceptsKey` takes for every configured window
package windowset

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"trending/model"
)

// Kind says how a window moves. It is the one window vocabulary of every role: the window
// set, the speed core (speed/window.WindowConfig), the capacity plan and the accuracy harness.
type Kind string

const (
	// Sliding: the Length up to the newest event, in Bucket steps ("the last hour"); it ends
	// at the watermark's minute and moves every minute.
	Sliding Kind = "sliding"
	// Calendar: fixed UTC periods of one Span (10:00-11:00, a day, a month); each produces
	// one final list when the watermark passes its end, and the batch makes it exact.
	Calendar Kind = "calendar"
	// AllTime: every event ever, up to the watermark's minute; named "all" (the batch's exact
	// base and the live list are built on that name). It accepts every late event. Exact mode
	// keeps a running total per item ever seen (memory grows with the catalog); sketch mode
	// one running count-min sketch and a candidate set.
	AllTime Kind = "alltime"
	// Decayed: no edge; every view counts 2^(-age/HalfLife), so the list ranks what is
	// trending now and forgets smoothly (speed/window, "Decayed windows"). Live only: the
	// batch does not recompute it.
	Decayed Kind = "decayed"
)

// Mode says how a window counts in the speed layer.
type Mode string

const (
	// Exact counts every item: per-bucket count arrays plus running totals.
	Exact Mode = "exact"
	// Sketch counts in count-min sketches (one per bucket plus a running one) and keeps a
	// candidate set of items whose estimate passed a floor.
	Sketch Mode = "sketch"
	// Frequent counts in Misra-Gries summaries of Capacity counters (speed/frequent): one
	// per bucket of a sliding window, merged as it slides; one running summary of a calendar
	// period or of all time. Every listed item carries a proven lower and upper bound on its
	// views, and the list states its guarantee: no item with more views than its Cutoff is
	// missing (issue 32). Not for decayed windows. Auto never picks it: it is the mode to
	// ask for when the guarantee, not the smallest error on average, is the point.
	Frequent Mode = "frequent"
	// Auto: exact for windows up to 24 hours long, sketch beyond (sliding windows over 24h,
	// calendar weeks and months, all time): the capacity arithmetic of docs/requirements.md,
	// where the hour and day fit exactly and the month does not. A decayed window's length
	// is its horizon, 10 half-lives (exact up to a 2h24m half-life). Empty means Auto.
	Auto Mode = "auto"
)

// Modes are the modes a window can be configured with, Auto last; every other one is a way
// of counting that Auto may resolve to. A new mode is one constant and one entry here.
var Modes = []Mode{Exact, Sketch, Frequent, Auto}

// Valid reports whether m is one of Modes.
func (m Mode) Valid() bool { return slices.Contains(Modes, m) }

// ModeNames lists Modes for a message: "exact, sketch or auto".
func ModeNames() string {
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// MinHalfLife and MaxHalfLife bound a decayed window's half-life, a whole number of minutes
// (speed/window.MinHalfLife, MaxHalfLife).
const (
	MinHalfLife = 5 * time.Minute
	MaxHalfLife = 30 * 24 * time.Hour
)

// AllName is the all-time window's name.
const AllName = "all"

// MaxWindows bounds a set (the speed core's limit, speed/window.MaxWindows).
const MaxWindows = 16

// MaxBuckets bounds Length/Bucket of a sliding window (speed/window.MaxBuckets).
const MaxBuckets = 1440

// reserved names are store keys of their own, never a configured window.
var reserved = []string{model.BaseWindow, model.SinceWindow, model.TopicsList}

// Window is one served window.
type Window struct {
	// Name is the served name: a live list's window ("hour", "7d", "all"); a calendar
	// window's is its Span.
	Name string
	Kind Kind
	// Length and Bucket define a sliding window: Length/Bucket buckets of 1m, 1h or 24h.
	Length, Bucket time.Duration
	// Span is a calendar window's period (model.Hour, Day, Week or Month).
	Span model.Period
	// Mode is exact, sketch, frequent or auto (empty: auto).
	Mode Mode
	// HalfLife is a decayed window's half-life (MinHalfLife to MaxHalfLife, whole minutes).
	HalfLife time.Duration
	// Capacity is a frequent window's counters per summary (1..MaxCapacity; 0: the
	// deployment's default, speed's --frequent-capacity): its bound is N/(Capacity+1) of
	// its N views. Written "frequent/4096" in a spec. Other modes leave it 0.
	Capacity int
}

// MaxCapacity bounds a frequent window's Capacity (speed/frequent.MaxCapacity).
const MaxCapacity = 1 << 24

// Live reports whether the window is served as a live list (sliding, all time or decayed).
func (w Window) Live() bool { return w.Kind != Calendar }

// Set is a deployment's served windows, in the order given, and the group values that get
// lists of their own in each of them (groups.go).
type Set struct {
	Windows []Window
	// Groups are the lists per group value beside each window's list of all items; the zero
	// value (the default) keeps none.
	Groups Groups
}

// Default is the set trending always served: the sliding hour (60 minute buckets, exact),
// day (24 hourly buckets, exact) and month (30 daily buckets, sketch), the calendar hour and
// day (exact) and month (sketch), and all time (sketch).
func Default() Set {
	s, err := Parse(DefaultSpec)
	if err != nil {
		panic("BUG: the default window set does not parse: " + err.Error())
	}
	return s
}

// DefaultSpec is Default as a spec string.
const DefaultSpec = "hour=sliding:1h/1m:exact,day=sliding:24h/1h:exact,month=sliding:30d/24h:sketch," +
	"calendar:hour:exact,calendar:day:exact,calendar:month:sketch,all=alltime:sketch"

// Presets are the named sets --window-preset picks from.
var Presets = map[string]string{
	"default": DefaultSpec,
	// Seed 004: the last minute, hour, day and 7 days, and the closed calendar day
	// ("yesterday") and week ("last week") the batch makes exact. Every window counts by
	// sketch, so a partition's memory is bounded whatever the number of distinct items (seed
	// 004's defining property): 102 sketches (the 7 days are 7 daily buckets, not 168
	// hourly ones, which alone would take 170), about 1.07 GB a partition at the default
	// 262,144 x 5 (`trending plan --window-preset seed-004`).
	"seed-004": "minute=sliding:1m/1m:sketch,hour=sliding:1h/1m:sketch,day=sliding:24h/1h:sketch,7d=sliding:7d/24h:sketch," +
		"calendar:day:sketch,calendar:week:sketch",
}

// PresetNames lists the presets, sorted.
func PresetNames() []string {
	names := make([]string, 0, len(Presets))
	for n := range Presets {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Preset returns the named preset.
func Preset(name string) (Set, error) {
	spec, ok := Presets[name]
	if !ok {
		return Set{}, fmt.Errorf("window preset %q: use one of %s", name, strings.Join(PresetNames(), ", "))
	}
	return Parse(spec)
}

// Parse reads a spec string: windows separated by commas, each one of
//
//	NAME=sliding:LENGTH/BUCKET[:MODE]   a sliding window (hour=sliding:1h/1m:exact, 7d=sliding:7d/1h)
//	calendar:SPAN[:MODE]                a calendar window, served under its span (calendar:week)
//	all=alltime[:MODE]                  the all-time window (all[:MODE] for short)
//	NAME=decayed:HALFLIFE[:MODE]        a decayed window (now=decayed:1h): every view counts
//	                                    2^(-age/HALFLIFE), no edge
//
// LENGTH, BUCKET and HALFLIFE are Go durations or whole days (7d); BUCKET is 1m, 1h or 24h (1d);
// SPAN is hour, day, week or month; MODE is exact, sketch, frequent or auto (default auto),
// frequent optionally with its capacity (frequent/4096). The set
// is validated (Validate).
func Parse(spec string) (Set, error) {
	var s Set
	var errs []error
	for i, raw := range strings.Split(spec, ",") {
		e := strings.TrimSpace(raw)
		if e == "" {
			continue
		}
		w, err := parseEntry(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("window %d %q: %w", i+1, e, err))
			continue
		}
		s.Windows = append(s.Windows, w)
	}
	if err := errors.Join(errs...); err != nil {
		return Set{}, err
	}
	return s, s.Validate()
}

func parseEntry(e string) (Window, error) {
	name, def, named := strings.Cut(e, "=")
	if !named {
		name, def = "", e
	}
	parts := strings.Split(def, ":")
	w := Window{Name: strings.TrimSpace(name), Kind: Kind(strings.TrimSpace(parts[0]))}
	args := parts[1:]
	mode := func(rest []string) error {
		switch len(rest) {
		case 0:
			return nil
		case 1:
			m, c, ok := strings.Cut(strings.TrimSpace(rest[0]), "/")
			w.Mode = Mode(m)
			if ok {
				n, err := strconv.Atoi(c)
				if err != nil || n <= 0 {
					return fmt.Errorf("capacity %q: want a positive number of counters, as in frequent/4096", c)
				}
				w.Capacity = n
			}
			return nil
		}
		return fmt.Errorf("too many ':' fields: want at most a mode after the window")
	}
	switch w.Kind {
	case Sliding:
		if !named {
			return w, fmt.Errorf("a sliding window needs a name: NAME=sliding:LENGTH/BUCKET, as in hour=sliding:1h/1m")
		}
		if len(args) == 0 {
			return w, fmt.Errorf("want sliding:LENGTH/BUCKET, as in hour=sliding:1h/1m")
		}
		l, b, ok := strings.Cut(args[0], "/")
		if !ok {
			return w, fmt.Errorf("%q: want LENGTH/BUCKET, as in 1h/1m or 7d/1h", args[0])
		}
		var err error
		if w.Length, err = ParseDuration(l); err != nil {
			return w, fmt.Errorf("length: %w", err)
		}
		if w.Bucket, err = ParseDuration(b); err != nil {
			return w, fmt.Errorf("bucket: %w", err)
		}
		return w, mode(args[1:])
	case Calendar:
		if len(args) == 0 {
			return w, fmt.Errorf("want calendar:SPAN, SPAN one of %s", model.PeriodNames())
		}
		w.Span = model.Period(strings.TrimSpace(args[0]))
		if w.Name == "" {
			w.Name = string(w.Span)
		}
		return w, mode(args[1:])
	case AllTime, "all-time", "all":
		w.Kind = AllTime
		if w.Name == "" {
			w.Name = AllName
		}
		return w, mode(args)
	case Decayed:
		if !named {
			return w, fmt.Errorf("a decayed window needs a name: NAME=decayed:HALFLIFE, as in now=decayed:1h")
		}
		if len(args) == 0 {
			return w, fmt.Errorf("want decayed:HALFLIFE, as in now=decayed:1h")
		}
		var err error
		if w.HalfLife, err = ParseDuration(args[0]); err != nil {
			return w, fmt.Errorf("half-life: %w", err)
		}
		return w, mode(args[1:])
	}
	return w, fmt.Errorf("kind %q: use sliding (NAME=sliding:1h/1m), calendar (calendar:week), alltime (all=alltime) or decayed (now=decayed:1h)", w.Kind)
}

// ParseDuration reads a Go duration or whole days ("7d", "1d12h").
func ParseDuration(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	var days int64
	if i := strings.IndexByte(s, 'd'); i >= 0 {
		n, err := strconv.ParseInt(s[:i], 10, 64)
		if err != nil || n < 0 || n > 3650 {
			return 0, fmt.Errorf("%q: days must be a whole number from 0 to 3650, as in 7d", s)
		}
		days, s = n, s[i+1:]
		if s == "" {
			return time.Duration(days) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 1m, 1h, 24h or 7d", s)
	}
	return time.Duration(days)*24*time.Hour + d, nil
}

// FormatDuration prints d as ParseDuration reads it: two or more whole days as "Nd", else
// the shortest Go form (1m, 1h, 24h, 90m).
func FormatDuration(d time.Duration) string {
	const day = 24 * time.Hour
	if d >= 2*day && d%day == 0 {
		return strconv.FormatInt(int64(d/day), 10) + "d"
	}
	s := d.String() // 1h0m0s, 1m0s, 1m30s, 30s, 0s
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// String is the set as a spec string Parse reads back.
func (s Set) String() string {
	parts := make([]string, len(s.Windows))
	for i, w := range s.Windows {
		parts[i] = w.String()
	}
	return strings.Join(parts, ",")
}

// String is the window as one spec entry.
func (w Window) String() string {
	var b strings.Builder
	switch w.Kind {
	case Sliding:
		fmt.Fprintf(&b, "%s=sliding:%s/%s", w.Name, FormatDuration(w.Length), FormatDuration(w.Bucket))
	case Calendar:
		b.WriteString("calendar:" + string(w.Span))
	case Decayed:
		fmt.Fprintf(&b, "%s=decayed:%s", w.Name, FormatDuration(w.HalfLife))
	default:
		fmt.Fprintf(&b, "%s=%s", w.Name, w.Kind)
	}
	if w.Mode != "" {
		b.WriteString(":" + string(w.Mode))
	}
	if w.Capacity != 0 {
		b.WriteString("/" + strconv.Itoa(w.Capacity))
	}
	return b.String()
}

// Validate reports every window that cannot be served, joined; each error names the window
// and says what to change.
func (s Set) Validate() error {
	var errs []error
	switch n := len(s.Windows); {
	case n == 0:
		return errors.New("no windows: configure at least one (default: " + DefaultSpec + ")")
	case n > MaxWindows:
		errs = append(errs, fmt.Errorf("%d windows: at most %d", n, MaxWindows))
	}
	live, cal := map[string]bool{}, map[string]bool{}
	for _, w := range s.Windows {
		if err := w.validate(); err != nil {
			errs = append(errs, err)
			continue
		}
		seen := live
		if w.Kind == Calendar {
			seen = cal
		}
		if seen[w.Name] {
			errs = append(errs, fmt.Errorf("window %q is configured twice: names must be unique", w.Name))
		}
		seen[w.Name] = true
	}
	if err := s.Groups.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (w Window) validate() error {
	if w.Mode != "" && !w.Mode.Valid() {
		return fmt.Errorf("window %q: mode %q: use %s", w.Name, w.Mode, ModeNames())
	}
	switch {
	case w.Capacity != 0 && w.Mode != Frequent:
		return fmt.Errorf("window %q: a capacity (/%d) is a frequent window's: drop it or use mode frequent", w.Name, w.Capacity)
	case w.Capacity < 0 || w.Capacity > MaxCapacity:
		return fmt.Errorf("window %q: capacity %d: use 1..%d counters", w.Name, w.Capacity, MaxCapacity)
	case w.Mode == Frequent && w.Kind == Decayed:
		return fmt.Errorf("window %q: a decayed window cannot count in frequent mode (its views are weighted, a summary's bound is in whole views): use exact or sketch", w.Name)
	}
	if !model.ValidWindowName(w.Name) {
		return fmt.Errorf("window name %q: use 1 to %d lowercase letters, digits, '-' or '_'", w.Name, model.MaxWindowName)
	}
	if slices.Contains(reserved, w.Name) {
		return fmt.Errorf("window name %q is reserved (the store's own keys: %s): pick another", w.Name, strings.Join(reserved, ", "))
	}
	switch w.Kind {
	case Sliding:
		if w.Name == AllName {
			return fmt.Errorf("window %q: the name all is the all-time window's (all=alltime): name the sliding window otherwise", w.Name)
		}
		if w.Span != "" {
			return fmt.Errorf("window %q: a sliding window has no span", w.Name)
		}
		if w.Bucket != time.Minute && w.Bucket != time.Hour && w.Bucket != 24*time.Hour {
			return fmt.Errorf("window %q: bucket %s: use 1m, 1h or 24h", w.Name, FormatDuration(w.Bucket))
		}
		if w.Length <= 0 || w.Length%w.Bucket != 0 {
			return fmt.Errorf("window %q: length %s is not a positive whole number of %s buckets", w.Name, FormatDuration(w.Length), FormatDuration(w.Bucket))
		}
		if n := w.Length / w.Bucket; n > MaxBuckets {
			return fmt.Errorf("window %q: %d buckets of %s: at most %d; use a larger bucket", w.Name, n, FormatDuration(w.Bucket), MaxBuckets)
		}
	case Calendar:
		if !w.Span.Valid() {
			return fmt.Errorf("window %q: span %q: use one of %s", w.Name, w.Span, model.PeriodNames())
		}
		if w.Name != string(w.Span) {
			return fmt.Errorf("calendar window %q: a calendar window is served under its span's name (%s): drop the name", w.Name, w.Span)
		}
	case AllTime:
		if w.Name != AllName {
			return fmt.Errorf("all-time window %q: the all-time window is named all", w.Name)
		}
	case Decayed:
		if w.Name == AllName {
			return fmt.Errorf("window %q: the name all is the all-time window's (all=alltime): name the decayed window otherwise", w.Name)
		}
		if w.Span != "" || w.Length != 0 || w.Bucket != 0 {
			return fmt.Errorf("window %q: a decayed window has a half-life only, no span, length or bucket", w.Name)
		}
		if w.HalfLife < MinHalfLife || w.HalfLife > MaxHalfLife || w.HalfLife%time.Minute != 0 {
			return fmt.Errorf("window %q: half-life %s: use a whole number of minutes from %s to %s, such as 1h", w.Name, FormatDuration(w.HalfLife), FormatDuration(MinHalfLife), FormatDuration(MaxHalfLife))
		}
	default:
		return fmt.Errorf("window %q: kind %q: use sliding, calendar, alltime or decayed", w.Name, w.Kind)
	}
	if w.Kind != Decayed && w.HalfLife != 0 {
		return fmt.Errorf("window %q: only a decayed window has a half-life", w.Name)
	}
	return nil
}

// Live returns the names of the live lists (sliding and all time), in configured order.
func (s Set) Live() []string {
	var out []string
	for _, w := range s.Windows {
		if w.Live() {
			out = append(out, w.Name)
		}
	}
	return out
}

// Calendar returns the calendar periods configured, shortest first.
func (s Set) Calendar() []model.Period {
	var out []model.Period
	for _, sp := range model.Periods {
		if s.HasCalendar(sp) {
			out = append(out, sp)
		}
	}
	return out
}

// HasLive reports whether name is a configured live window.
func (s Set) HasLive(name string) bool { return slices.Contains(s.Live(), name) }

// HasCalendar reports whether span is a configured calendar window.
func (s Set) HasCalendar(span model.Period) bool {
	return slices.ContainsFunc(s.Windows, func(w Window) bool { return w.Kind == Calendar && w.Span == span })
}

// Lookup returns the configured window serving a live list or, with calendar, a calendar one.
func (s Set) Lookup(name string, calendar bool) (Window, bool) {
	for _, w := range s.Windows {
		if w.Name == name && (w.Kind == Calendar) == calendar {
			return w, true
		}
	}
	return Window{}, false
}

// aliasLengths are the seed-003 video API's names: 1h and 24h are the sliding windows of
// that length (a true 24 hours when the day is configured as 1,440 minute buckets).
var aliasLengths = map[string]time.Duration{"1h": time.Hour, "24h": 24 * time.Hour}

// Aliases maps each alias the set answers to the live window it names: 1h and 24h to the
// first sliding window of that length, unless a window has that name itself.
func (s Set) Aliases() map[string]string {
	out := map[string]string{}
	for a, d := range aliasLengths {
		if s.HasLive(a) {
			continue
		}
		for _, w := range s.Windows {
			if w.Kind == Sliding && w.Length == d {
				out[a] = w.Name
				break
			}
		}
	}
	return out
}

// ResolveLive returns the live window a request's name means: a configured name, or an
// alias (Aliases).
func (s Set) ResolveLive(name string) (string, bool) {
	if s.HasLive(name) {
		return name, true
	}
	w, ok := s.Aliases()[name]
	return w, ok
}

// AcceptsKey reports whether a list of key k belongs to the set: a configured live window,
// a configured calendar span, either of them for a group value that gets lists (Groups), or
// a key the system keeps on its own (the batch's all-time base and trending-topics lists,
// which have their own configuration).
func (s Set) AcceptsKey(k model.Key) bool {
	switch {
	case k.IsTopics():
		return true
	case k.Group != "":
		if k.Score != "" || k.Window == model.BaseWindow || !s.Groups.Accepts(k.Group) {
			return false
		}
		k.Group = ""
		return s.AcceptsKey(k)
	case k.Score != "":
		return false
	case k.Live() && k.Window == model.BaseWindow:
		return s.HasLive(AllName)
	case k.Live():
		return s.HasLive(k.Window)
	}
	return s.HasCalendar(model.Period(k.Window))
}

// Describe says which names the set accepts, for a 400 or a refused write: "live windows
// hour, day, month, all (aliases 1h, 24h); calendar windows hour, day, month".
func (s Set) Describe() string {
	var b strings.Builder
	b.WriteString("live windows ")
	if l := s.Live(); len(l) > 0 {
		b.WriteString(strings.Join(l, ", "))
	} else {
		b.WriteString("none")
	}
	if a := s.Aliases(); len(a) > 0 {
		names := make([]string, 0, len(a))
		for n := range a {
			names = append(names, n)
		}
		slices.Sort(names)
		b.WriteString(" (aliases " + strings.Join(names, ", ") + ")")
	}
	b.WriteString("; calendar windows ")
	if c := s.Calendar(); len(c) > 0 {
		b.WriteString(strings.Join(model.PeriodStrings(c), ", "))
	} else {
		b.WriteString("none")
	}
	if s.Groups.On() {
		b.WriteString("; lists per " + s.Groups.By + ": " + strings.TrimPrefix(s.Groups.Describe(), s.Groups.By+" "))
	}
	return b.String()
}
