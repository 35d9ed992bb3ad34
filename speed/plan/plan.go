// Package plan owns the capacity arithmetic of the speed layer: how much memory exact counting
// takes for each sliding window, how much count-min sketches take instead, which of the two each
// window should use, and the sketch's error bound. It reproduces the capacity arithmetic in
// docs/requirements.md (exact 7.5 GB hour, 43.5 GB day, 250 GB month against 10.5 MB sketches,
// about 11 GB and 23 times less, an overcount of about 48,600 views at 99.3%) and the
// trending-topics minute-sketch sizing (5 x 65,536, 1.31 MB, 79 MB for a ring of 60), so that
// the choice the speed layer makes per window is a number anyone can recompute with
// `trending plan`, not a belief.
//
// The package does no I/O: Compute is a pure function of its Input.
//
// In detail (DESIGN.md's file map has the line): the capacity arithmetic
// (docs/requirements.md (docs/requirements.md#capacity), windows in the model's `Kind`,
// `Mode` and `Period`): memory per window exact vs sketch, the choice and why, the error
// bound; a decayed window as one score an item of its 10-half-life horizon, its sketch's N
// the decayed total (h/ln 2 minutes of views) ; with lists per group value, each window's
// per-group memory in its mode (exact: `--group-pairs` times its entries; sketch: its
// sketches at `--group-sketch-width` per group, with the largest group's bound)
package plan

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"trending/model"
	"trending/model/windowset"
	"trending/speed/frequent"
)

// RingMinutes is the number of one-minute sketches in the trending-topics ring
// (one per minute of the last hour, summed to answer a window, never
// decremented).
const RingMinutes = 60

// Input is what the plan is computed from. DefaultInput holds the views scenario of
// docs/requirements.md (5 billion views a day over 32 partitions); every
// field documents its default.
type Input struct {
	// EventsPerDay is the sum of all event counts in a day (views, not messages: events are
	// pre-summed per server per second). Default 5e9.
	EventsPerDay float64 `json:"events_per_day"`
	// DistinctPerMinute .. DistinctPerMonth are the distinct items seen in one bucket of each
	// size. Defaults 2e6, 30e6, 150e6, 500e6.
	DistinctPerMinute float64 `json:"distinct_per_minute"`
	DistinctPerHour   float64 `json:"distinct_per_hour"`
	DistinctPerDay    float64 `json:"distinct_per_day"`
	DistinctPerMonth  float64 `json:"distinct_per_month"`
	// EntryBytes is the memory of one exact counter entry: item id, count and hash-map
	// overhead. Default 50, the budget the capacity arithmetic (docs/requirements.md)
	// assumes; our packed buckets measure 34.9 B. Candidate entries are costed the same.
	EntryBytes float64 `json:"entry_bytes"`
	// Partitions is the number of log partitions, one counting task each. Default 32.
	Partitions int `json:"partitions"`
	// SketchWidth and SketchDepth are the count-min sketch's columns and rows. Defaults 262144
	// (2^18) and 5. Every sketch shares them, so sketches add and subtract cell by cell.
	SketchWidth int `json:"sketch_width"`
	SketchDepth int `json:"sketch_depth"`
	// CounterBytes is the size of one sketch cell. Default 8, so a month's counts cannot
	// overflow; the trending-topics minute sketch uses 4, which is enough for a minute but
	// can overflow over a month (see Plan.Warnings).
	CounterBytes int `json:"counter_bytes"`
	// KthCount is the assumed count of the K-th item over the month. Default 1e6. For shorter
	// windows it is scaled by their length, which assumes a top item's views are spread evenly
	// over the month; real trending items are burstier, so the scaled figure is conservative.
	KthCount float64 `json:"kth_count"`
	// CandidateFloor is the month estimate an item must reach to join the candidate set.
	// Zero means half of KthCount (500,000 for the month's 1,000,000). It must stay well
	// above the sketch's overcount, or the candidate set fills with noise.
	CandidateFloor float64 `json:"candidate_floor"`
	// ErrorTolerance is the largest acceptable sketch overcount as a fraction of the K-th
	// count. Default 0.05: counts within about 5% are fine for the month (docs/requirements.md).
	ErrorTolerance float64 `json:"error_tolerance"`
	// MemoryBudgetPerPartition is the exact state one task may hold for one window, in bytes.
	// Default 2 GiB: a task checkpoints its whole state every minute, and 2 GiB uploads in
	// about 20 s at a single stream's ~100 MB/s to S3, well inside the minute, while Go's
	// default GOGC=100 lets a 2 GiB live heap peak near 4 GiB, which fits an 8 GB container
	// with room for fetch buffers. The day, 1.36 GB per task (today and at 10x), fits; the month's
	// 7.81 GB per task does not (it would not even checkpoint once a minute).
	MemoryBudgetPerPartition float64 `json:"memory_budget_per_partition"`
	// MemoryBudgetTotal is the most exact state one window may take over all partitions, in
	// bytes, before the plan gives up exactness for it. Default 100 GB. Spreading a window
	// over more partitions keeps each task small but not the fleet's bill: at 10x, the day
	// is 1.36 GB per task over 320 tasks, the same per task as today, yet 435 GB in all. The
	// capacity arithmetic (docs/requirements.md) calls 43.5 GB (day) and 75 GB (the 10x
	// hour) affordable and 250 GB (month) and 435 GB (the 10x day) not; 100 GB sits between.
	MemoryBudgetTotal float64 `json:"memory_budget_total"`
	// MonthDays is the length of the month window in days. Default 30.
	MonthDays int `json:"month_days"`
	// PeakFactor is the ratio of peak to average event rate. Default 3: about 175,000
	// views a second at peak against 58,000 on average.
	PeakFactor float64 `json:"peak_factor"`
	// FrequentError is the largest offset a frequent window (windowset.Frequent) may have,
	// as a fraction of its K-th count: each such window's capacity m is sized so that its
	// bound N/(m+1) stays within it (speed/frequent.CapacityFor), unless the window sets
	// its own capacity. 0 (the default) is ErrorTolerance.
	FrequentError float64 `json:"frequent_error,omitempty"`
	// Windows are the configured windows to size (model/windowset, `--window-set`): each
	// sliding, calendar or all-time window with the mode it is configured with. Empty (the
	// default) sizes the sliding hour, day and month of docs/requirements.md and lets the
	// budgets choose each one's mode.
	Windows []Window `json:"windows,omitempty"`

	// Groups is how many group values get lists of their own (model/windowset.Groups: the
	// values listed, or the cap of every value seen). Each keeps, in every partition that sees
	// its events, the windows' state for those events, in the window's mode. Default 0: none.
	Groups int `json:"groups,omitempty"`
	// GroupPairs is how many (group, item) pairs a bucket holds per distinct item of the
	// bucket, over all groups: 1 when each item is seen in one group only, Groups when every
	// item is seen in every group. Exact group state grows with these pairs. 0 (the default)
	// is Groups, the most there can be: measure it (GROUP BY bucket, region, item) to plan
	// less.
	GroupPairs float64 `json:"group_pairs,omitempty"`
	// GroupSketchWidth is the columns of the groups' sketches; 0 (the default) is SketchWidth.
	GroupSketchWidth int `json:"group_sketch_width,omitempty"`
	// GroupShare is the largest group's share of the events, which sets its sketches' error
	// bound. 0 (the default) is 1: one group may take every event.
	GroupShare float64 `json:"group_share,omitempty"`
	// CapPairsPerHour is the distinct (account, item) pairs an hour over the topic, the
	// per-account caps' keys (docs/moderation.md#per-account-caps); 0: caps off. With
	// groups, an event with a region holds a second key (the region's), costed as
	// CapPairsPerHour more.
	CapPairsPerHour float64 `json:"cap_pairs_per_hour,omitempty"`
	// CapKeepHours is how many hours before the newest a partition keeps (speed/worker's
	// Cap.KeepHours): its table holds CapKeepHours+1 hours of pairs. Default 2.
	CapKeepHours int `json:"cap_keep_hours,omitempty"`

	// ViewsPerEvent is how many views one archived event holds on average (events are
	// pre-summed per server and second): the archive's rows a day are EventsPerDay over it.
	// 0 (the default) is 1, each view its own row: the most rows there can be. The split
	// soak measured 1.37 (0.73 events a view) with 500 servers (BENCHMARKS.md, Soak).
	ViewsPerEvent float64 `json:"views_per_event,omitempty"`
	// ArchiveBytesPerEvent is what one archived event takes in the Parquet files. 0 (the
	// default) is MeasuredArchiveBytesPerEvent; the seed's arithmetic assumes
	// SeedArchiveBytesPerEvent (docs/archive.md).
	ArchiveBytesPerEvent float64 `json:"archive_bytes_per_event,omitempty"`
	// RetentionDays is how long raw events are kept (`trending archive retention --days`).
	// 0 (the default) is 365, seed 004's year.
	RetentionDays int `json:"retention_days,omitempty"`
}

// MeasuredArchiveBytesPerEvent is what `make run`'s stream took per event in our Parquet files
// (docs/archive.md: 4,223,251 events in 16,619,333 bytes, a 10,000-item catalog; a catalog of
// millions of longer ids compresses less). SeedArchiveBytesPerEvent is seed 004's assumption:
// 200 bytes an event, 2 TB a day at 10 billion.
const (
	MeasuredArchiveBytesPerEvent = 3.9
	SeedArchiveBytesPerEvent     = 200
)

// ArchivePlan sizes the raw events' archive: rows a day, the bytes they take a day and over
// the retention, and the same at the seed's 200 bytes an event for comparison.
type ArchivePlan struct {
	RowsPerDay         float64 `json:"rows_per_day"`
	BytesPerEvent      float64 `json:"bytes_per_event"`
	BytesPerDay        float64 `json:"bytes_per_day"`
	RetentionDays      int     `json:"retention_days"`
	RetentionBytes     float64 `json:"retention_bytes"`
	SeedBytesPerDay    float64 `json:"seed_bytes_per_day"`
	SeedRetentionBytes float64 `json:"seed_retention_bytes"`
}

// Window is one configured window to size.
type Window struct {
	Name string `json:"name"`
	// Kind is the window's kind (model/windowset: sliding, calendar, alltime, decayed).
	Kind windowset.Kind `json:"kind"`
	// LengthMinutes and BucketMinutes define a sliding window (bucket 1, 60 or 1440).
	LengthMinutes int `json:"length_minutes,omitempty"`
	BucketMinutes int `json:"bucket_minutes,omitempty"`
	// Span is a calendar window's period.
	Span model.Period `json:"span,omitempty"`
	// Mode is exact, sketch or auto (empty: auto, the speed layer's rule: exact up to 24
	// hours, sketch beyond; all time by sketch; a decayed window by its horizon).
	Mode windowset.Mode `json:"mode,omitempty"`
	// HalfLifeMinutes is a decayed window's half-life.
	HalfLifeMinutes int `json:"half_life_minutes,omitempty"`
	// Capacity is a frequent window's configured counters (0: sized from FrequentError).
	Capacity int `json:"capacity,omitempty"`
}

// FrequentCounterBytes is the memory of one frequent-summary counter: the item's id (16
// bytes, a typical video id), its string header, the count and its index map entry
// (speed/frequent.Summary.Bytes: 56 bytes plus the id).
const FrequentCounterBytes = 72

// DecayedHorizonHalfLives is how many half-lives a decayed window remembers a single view
// (speed/window.ForgetHalfLives): its exact memory is the distinct items of that horizon,
// and Auto counts it exactly when the horizon is at most a day, as for any window.
const DecayedHorizonHalfLives = 10

// DefaultInput returns the views scenario of docs/requirements.md: 5 billion views a
// day, 2 million distinct videos a minute, 30 million an hour, 150 million a day, 500
// million a month, 50-byte entries, 32 partitions, 2^18 x 5 sketches of 8-byte
// counters, a K-th month count of 1 million.
func DefaultInput() Input {
	return Input{
		EventsPerDay:             5e9,
		DistinctPerMinute:        2e6,
		DistinctPerHour:          30e6,
		DistinctPerDay:           150e6,
		DistinctPerMonth:         500e6,
		EntryBytes:               50,
		Partitions:               32,
		SketchWidth:              1 << 18,
		SketchDepth:              5,
		CounterBytes:             8,
		KthCount:                 1e6,
		CandidateFloor:           0,
		ErrorTolerance:           0.05,
		MemoryBudgetPerPartition: 2 * GiB,
		MemoryBudgetTotal:        100 * GB,
		MonthDays:                30,
		PeakFactor:               3,
	}
}

// Validate rejects inputs the arithmetic cannot use, each with what to change. All problems
// are reported at once: errors.Join of *FieldError, each wrapping ErrInvalidInput.
func (in Input) Validate() error {
	var errs []error
	bad := func(field string, v any, reason string, refs ...string) {
		errs = append(errs, &FieldError{Field: field, Value: v, Reason: reason, Refs: refs})
	}
	positive := func(field string, v float64) bool {
		if !(v > 0) || math.IsInf(v, 0) {
			bad(field, v, "must be a positive number")
			return false
		}
		return true
	}
	okEvents := positive("EventsPerDay", in.EventsPerDay)
	okMin := positive("DistinctPerMinute", in.DistinctPerMinute)
	okHour := positive("DistinctPerHour", in.DistinctPerHour)
	okDay := positive("DistinctPerDay", in.DistinctPerDay)
	okMonth := positive("DistinctPerMonth", in.DistinctPerMonth)
	positive("EntryBytes", in.EntryBytes)
	okKth := positive("KthCount", in.KthCount)
	positive("MemoryBudgetPerPartition", in.MemoryBudgetPerPartition)
	positive("MemoryBudgetTotal", in.MemoryBudgetTotal)
	positive("PeakFactor", in.PeakFactor)
	if in.PeakFactor > 0 && in.PeakFactor < 1 {
		bad("PeakFactor", in.PeakFactor, "must be at least 1: the peak rate cannot be below the average")
	}
	if !(in.ErrorTolerance > 0 && in.ErrorTolerance < 1) {
		bad("ErrorTolerance", in.ErrorTolerance, "must be a fraction between 0 and 1, such as 0.05 for 5%")
	}
	if !(in.FrequentError >= 0 && in.FrequentError < 1) {
		bad("FrequentError", in.FrequentError, "must be a fraction between 0 and 1, such as 0.01 for 1% (0: ErrorTolerance)")
	}
	if in.Partitions < 1 {
		bad("Partitions", in.Partitions, "must be at least 1")
	}
	if in.SketchWidth < 1 {
		bad("SketchWidth", in.SketchWidth, "must be at least 1; the month sketch uses 262144 (2^18)")
	} else if w := in.SketchWidth; w&(w-1) != 0 {
		// The speed workers take only powers of two (a column is a mask of the hash), so a
		// plan of any other width sizes a sketch no worker can run.
		lo := 1 << (bits.Len(uint(w)) - 1)
		bad("SketchWidth", w, fmt.Sprintf("is not a power of two, as the speed workers need: use %d or %d", lo, 2*lo))
	}
	if in.SketchDepth < 1 {
		bad("SketchDepth", in.SketchDepth, "must be at least 1; the month sketch uses 5")
	}
	if !slices.Contains([]int{1, 2, 4, 8}, in.CounterBytes) {
		bad("CounterBytes", in.CounterBytes, "must be 1, 2, 4 or 8, the size of an integer counter")
	}
	if in.Groups < 0 {
		bad("Groups", in.Groups, "must be 0 (no lists per group) or the number of group values with lists")
	}
	if math.IsNaN(in.GroupPairs) || in.GroupPairs < 0 || (in.GroupPairs > 0 && in.GroupPairs < 1) || (in.Groups > 0 && in.GroupPairs > float64(in.Groups)) {
		bad("GroupPairs", in.GroupPairs, "must be 0 (as many as %s) or from 1 (each item in one group) to %s (every item in every group)", "Groups", "Groups")
	}
	if w := in.GroupSketchWidth; w < 0 {
		bad("GroupSketchWidth", w, "must be 0 (%s) or the groups' sketch columns", "SketchWidth")
	} else if w > 0 && w&(w-1) != 0 {
		lo := 1 << (bits.Len(uint(w)) - 1)
		bad("GroupSketchWidth", w, fmt.Sprintf("is not a power of two, as the speed workers need: use %d or %d", lo, 2*lo))
	}
	if math.IsNaN(in.CapPairsPerHour) || in.CapPairsPerHour < 0 || in.CapPairsPerHour > 1e13 {
		bad("CapPairsPerHour", in.CapPairsPerHour, "must be 0 (no caps) or the distinct (account, item) pairs of an hour, up to 1e13")
	}
	if in.ViewsPerEvent != 0 && (!(in.ViewsPerEvent >= 1) || math.IsInf(in.ViewsPerEvent, 0)) {
		bad("ViewsPerEvent", in.ViewsPerEvent, "must be 0 (1) or at least 1: an event holds one view or more")
	}
	if in.ArchiveBytesPerEvent != 0 && (!(in.ArchiveBytesPerEvent > 0) || math.IsInf(in.ArchiveBytesPerEvent, 0)) {
		bad("ArchiveBytesPerEvent", in.ArchiveBytesPerEvent, "must be 0 (the measured 3.9) or a positive number")
	}
	if in.RetentionDays < 0 {
		bad("RetentionDays", in.RetentionDays, "must be 0 (365) or a number of days")
	}
	if in.CapKeepHours < 0 || in.CapKeepHours > 48 {
		bad("CapKeepHours", in.CapKeepHours, "must be 0 (2) to 48 hours")
	}
	if math.IsNaN(in.GroupShare) || in.GroupShare < 0 || in.GroupShare > 1 {
		bad("GroupShare", in.GroupShare, "must be 0 (one group may take every event) or a fraction up to 1")
	}
	if in.MonthDays < 28 || in.MonthDays > 31 {
		bad("MonthDays", in.MonthDays, "must be between 28 and 31")
	}
	if math.IsNaN(in.CandidateFloor) || in.CandidateFloor < 0 {
		bad("CandidateFloor", in.CandidateFloor, "must be 0 (half of %s) or a positive count", "KthCount")
	} else if okKth && in.CandidateFloor > in.KthCount {
		bad("CandidateFloor", in.CandidateFloor, "must not exceed %s: a top item would never become a candidate", "KthCount")
	}
	// Distinct counts must nest: a longer bucket holds every item of its shorter ones, and at
	// most all of them. These catch swapped or mistyped figures before they become a plan.
	if okEvents && okMin && in.DistinctPerMinute > in.EventsPerDay/1440 {
		bad("DistinctPerMinute", in.DistinctPerMinute, "must not exceed a minute's events (%s / 1440): each distinct item needs at least one", "EventsPerDay")
	}
	nest := func(ok bool, field string, v float64, shortField string, short float64, n float64, unit string) {
		if !ok {
			return
		}
		if v < short {
			bad(field, v, "must be at least %s: "+unit+" holds every item of its parts", shortField)
		} else if v > n*short {
			bad(field, v, fmt.Sprintf("must not exceed %g x %%s: %s holds at most the items of its parts", n, unit), shortField)
		}
	}
	nest(okHour && okMin, "DistinctPerHour", in.DistinctPerHour, "DistinctPerMinute", in.DistinctPerMinute, 60, "an hour")
	nest(okDay && okHour, "DistinctPerDay", in.DistinctPerDay, "DistinctPerHour", in.DistinctPerHour, 24, "a day")
	if in.MonthDays >= 28 && in.MonthDays <= 31 {
		nest(okMonth && okDay, "DistinctPerMonth", in.DistinctPerMonth, "DistinctPerDay", in.DistinctPerDay, float64(in.MonthDays), "a month")
	}
	return errors.Join(errs...)
}

// Bound is a count-min sketch's error guarantee for one window in one partition: an estimate
// is at most the true count plus Overcount = e/w x N, with probability at least Probability =
// 1 - e^-d for any one item. The estimate is never low.
type Bound struct {
	N             float64 `json:"n"`               // the sum of counts one partition adds over the window
	Overcount     float64 `json:"overcount"`       // e/w x N
	Probability   float64 `json:"probability"`     // 1 - e^-d
	KthCount      float64 `json:"kth_count"`       // the assumed K-th count for this window
	FractionOfKth float64 `json:"fraction_of_kth"` // Overcount / KthCount
}

// WindowPlan is the arithmetic and the choice for one window.
type WindowPlan struct {
	Window string `json:"window"` // "hour", "day" or "month"; a configured window's name
	// Kind is set for a configured window (Input.Windows): sliding, calendar or alltime.
	Kind windowset.Kind `json:"kind,omitempty"`
	// Configured is a configured window's mode as given (exact, sketch or auto); its Mode is
	// what the speed layer runs, Why what the budgets say of it.
	Configured windowset.Mode `json:"configured,omitempty"`
	Buckets    int            `json:"buckets"` // buckets in the window: 60 minutes, 24 hours, MonthDays days
	Bucket     string         `json:"bucket"`  // the bucket size: "minute", "hour" or "day"

	// Exact: one count map per bucket plus the running totals, over all partitions.
	ExactBytes        float64 `json:"exact_bytes"`
	ExactPerPartition float64 `json:"exact_per_partition"`

	// Sketch: per partition Buckets+2 sketches (every bucket of the window, the open bucket,
	// and the running window sketch: for the month, 31 daily + 1 month sketches) plus a
	// candidate set, over all partitions.
	Sketches           int            `json:"sketches_per_partition"`
	Candidates         float64        `json:"candidates_per_partition"`
	SketchBytes        float64        `json:"sketch_bytes"`
	SketchPerPartition float64        `json:"sketch_per_partition"`
	CandidateBytes     float64        `json:"candidate_bytes_per_partition"`
	ExactToSketch      float64        `json:"exact_to_sketch"` // ExactBytes / SketchBytes: how many times less the sketch takes
	Mode               windowset.Mode `json:"mode"`            // exact or sketch
	Why                string         `json:"why"`
	ErrorBound         *Bound         `json:"error_bound,omitempty"` // set for sketch windows
	ChosenPerPartition float64        `json:"chosen_per_partition"`  // bytes per partition of the chosen mode
	ChosenBytes        float64        `json:"chosen_bytes"`          // bytes over all partitions of the chosen mode
	// Frequent is set for a window counted in frequent mode (windowset.Frequent).
	Frequent *FrequentPlan `json:"frequent,omitempty"`
	// Groups is the window's lists per group value (Input.Groups), in the window's mode;
	// nil without groups. ChosenPerPartition and ChosenBytes do not include it.
	Groups *GroupPlan `json:"groups,omitempty"`
}

// FrequentPlan is a frequent window's size: the capacity m of each summary, sized so that
// the offset N/(m+1) of one partition's N views stays within the wanted bound, and the
// memory of its summaries (a sliding window's buckets, up to twice over in the two stacks'
// suffix merges, plus its running merges; a calendar or all-time window's one summary).
type FrequentPlan struct {
	Capacity  int     `json:"capacity"`
	Wanted    float64 `json:"wanted_bound"`  // the bound asked for, in views (FrequentError x the K-th count), 0 when the capacity is configured
	Bound     float64 `json:"bound"`         // N/(m+1): the most any count is off, and the cutoff's part past the list
	Summaries int     `json:"summaries"`     // summaries of m counters per partition, at most
	PerPart   float64 `json:"per_partition"` // bytes
	Bytes     float64 `json:"bytes"`         // over all partitions
}

// GroupPlan is the memory of one window's lists per group value: each group keeps the
// window's state for its events, exact (growing with the (group, item) pairs) or in sketches
// of the group sketch width (a fixed cost per group, whatever its traffic).
type GroupPlan struct {
	Groups int     `json:"groups"`
	Pairs  float64 `json:"pairs"` // (group, item) pairs per distinct item of a bucket (Input.GroupPairs resolved)
	// PerGroupPerPartition is one group's state in one partition (exact: its share of the
	// pairs; sketch: its sketches and candidates); PerPartition every group's; Bytes over
	// all partitions.
	PerGroupPerPartition float64 `json:"per_group_per_partition"`
	PerPartition         float64 `json:"per_partition"`
	Bytes                float64 `json:"bytes"`
	// ErrorBound is the largest group's sketch bound (its share of N, the group sketch
	// width); set for sketch windows.
	ErrorBound *Bound `json:"error_bound,omitempty"`
}

// CapMaxLoad is the largest share of the caps' table's slots the plan fills: open
// addressing with linear probing stays within a few probes below it.
const CapMaxLoad = 0.5

// CapPlan sizes the per-account caps' table (speed/viewcap): one table per partition of
// Slots slots of SlotBytes, a power of two holding the partition's keys of the kept hours at
// most CapMaxLoad full.
type CapPlan struct {
	KeysPerPartition float64 `json:"keys_per_partition"` // (account, item[, region]) keys of the kept hours
	Slots            int     `json:"slots"`              // --cap-slots
	SlotBytes        int     `json:"slot_bytes"`
	PerPartition     float64 `json:"per_partition"`
	Bytes            float64 `json:"bytes"`
}

// capSlotBytes is speed/viewcap.SlotBytes (the plan imports no speed package).
const capSlotBytes = 16

// Ring is the trending-topics sizing: RingMinutes one-minute sketches per partition.
type Ring struct {
	Minutes     int     `json:"minutes"`
	SketchBytes float64 `json:"sketch_bytes"` // one sketch
	Bytes       float64 `json:"bytes"`        // the ring, per partition
}

// Rates are the event rates the speed layer must absorb.
type Rates struct {
	PerSecond              float64 `json:"per_second"`
	PeakPerSecond          float64 `json:"peak_per_second"`
	PeakPerPartitionSecond float64 `json:"peak_per_partition_per_second"`
}

// Plan is the capacity plan: per window the exact and sketch memory and the chosen mode.
type Plan struct {
	Input       Input        `json:"input"`        // with defaults resolved (CandidateFloor)
	SketchBytes float64      `json:"sketch_bytes"` // one sketch: depth x width x counter bytes
	Windows     []WindowPlan `json:"windows"`
	// PerPartitionBytes and TotalBytes add up the chosen mode of every window, and of its
	// lists per group value: what one task and the whole fleet hold.
	PerPartitionBytes float64 `json:"per_partition_bytes"`
	TotalBytes        float64 `json:"total_bytes"`
	// GroupSketchBytes is one of the groups' sketches (depth x group width x counter bytes);
	// GroupPerPartitionBytes and GroupBytes are the lists per group value's share of the
	// totals.
	GroupSketchBytes       float64 `json:"group_sketch_bytes,omitempty"`
	GroupPerPartitionBytes float64 `json:"group_per_partition_bytes,omitempty"`
	GroupBytes             float64 `json:"group_bytes,omitempty"`
	Ring                   Ring    `json:"ring"`
	// Caps is the per-account caps' table of each partition (Input.CapPairsPerHour); nil
	// without caps. Its bytes are in the totals.
	Caps *CapPlan `json:"caps,omitempty"`
	// Archive is the raw events' archive in the object store (not in the memory totals).
	Archive  ArchivePlan `json:"archive"`
	Rates    Rates       `json:"rates"`
	Warnings []string    `json:"warnings"`
}

// Window returns the plan of the named window and whether there is one.
func (p Plan) Window(name string) (WindowPlan, bool) {
	for _, w := range p.Windows {
		if w.Window == name {
			return w, true
		}
	}
	return WindowPlan{}, false
}

// Compute validates in and works out the plan. Per window, exact is chosen when its state fits
// both budgets; otherwise whichever of exact and sketch is smaller, with a warning when even
// that does not fit.
func Compute(in Input) (Plan, error) {
	if err := in.Validate(); err != nil {
		return Plan{}, err
	}
	if in.CandidateFloor == 0 {
		in.CandidateFloor = in.KthCount / 2
	}
	if in.Groups > 0 {
		if in.GroupPairs == 0 {
			in.GroupPairs = float64(in.Groups)
		}
		if in.GroupSketchWidth == 0 {
			in.GroupSketchWidth = in.SketchWidth
		}
		if in.GroupShare == 0 {
			in.GroupShare = 1
		}
	}
	p := float64(in.Partitions)
	sketch := float64(in.SketchDepth) * float64(in.SketchWidth) * float64(in.CounterBytes)
	pl := Plan{
		Input:       in,
		SketchBytes: sketch,
		Ring:        Ring{Minutes: RingMinutes, SketchBytes: sketch, Bytes: RingMinutes * sketch},
		Warnings:    []string{},
	}
	pl.Rates.PerSecond = in.EventsPerDay / 86400
	pl.Rates.PeakPerSecond = pl.Rates.PerSecond * in.PeakFactor
	pl.Rates.PeakPerPartitionSecond = pl.Rates.PeakPerSecond / p
	pl.Archive = archivePlan(in)

	specs := []spec{
		{name: "hour", bucket: "minute", buckets: 60, bucketDistinct: in.DistinctPerMinute, windowDistinct: in.DistinctPerHour, minutesPerBucket: 1},
		{name: "day", bucket: "hour", buckets: 24, bucketDistinct: in.DistinctPerHour, windowDistinct: in.DistinctPerDay, minutesPerBucket: 60},
		{name: "month", bucket: "day", buckets: in.MonthDays, bucketDistinct: in.DistinctPerDay, windowDistinct: in.DistinctPerMonth, minutesPerBucket: 1440},
	}
	if len(in.Windows) > 0 {
		specs = specs[:0]
		for _, w := range in.Windows {
			specs = append(specs, in.specOf(w))
		}
	}
	maxCounter := math.Pow(2, 8*float64(in.CounterBytes)) - 1
	for _, s := range specs {
		pl.size(s, sketch, maxCounter)
	}
	if in.CapPairsPerHour > 0 {
		keep := in.CapKeepHours
		if keep == 0 {
			keep = 2
		}
		keys := in.CapPairsPerHour / p * float64(keep+1)
		if in.Groups > 0 {
			keys *= 2
		}
		slots := 1024
		for float64(slots)*CapMaxLoad < keys {
			slots *= 2
		}
		c := &CapPlan{KeysPerPartition: keys, Slots: slots, SlotBytes: capSlotBytes, PerPartition: float64(slots * capSlotBytes)}
		c.Bytes = c.PerPartition * p
		pl.Caps = c
		pl.PerPartitionBytes += c.PerPartition
		pl.TotalBytes += c.Bytes
	}
	if pl.PerPartitionBytes > in.MemoryBudgetPerPartition {
		pl.warnf("all windows together hold %s per partition, over the %s budget: add partitions or raise the budget",
			FormatBytes(pl.PerPartitionBytes), FormatSize(in.MemoryBudgetPerPartition))
	}
	return pl, nil
}

// spec is one window as the arithmetic sees it.
type spec struct {
	name, bucket     string
	buckets          int
	bucketDistinct   float64 // distinct items of one bucket (sliding)
	windowDistinct   float64 // distinct items over the window
	minutesPerBucket float64
	minutes          float64 // the window's length; 0: buckets x minutesPerBucket
	// massMinutes, when set, is how many minutes of views the window's N holds (a decayed
	// window's h/ln 2: the sum of 2^(-age/h) over a steady stream), where minutes is the
	// span its distinct items come from (its horizon).
	massMinutes float64
	capacity    int            // a frequent window's configured capacity
	kind        windowset.Kind // set for a configured window
	mode        windowset.Mode // set for a configured window, resolved to exact or sketch
	configured  windowset.Mode
}

// specOf turns a configured window into the arithmetic's terms. A calendar window keeps
// running totals only (no buckets: it never subtracts); the all-time window is sized for a
// month of history (its exact totals grow with the catalog, its sketch's N with time).
func (in Input) specOf(w Window) spec {
	s := spec{name: w.Name, kind: w.Kind, configured: w.Mode, capacity: w.Capacity}
	if s.configured == "" {
		s.configured = windowset.Auto
	}
	monthMinutes := float64(in.MonthDays) * 1440
	switch w.Kind {
	case windowset.Sliding:
		s.buckets = max(1, w.LengthMinutes/max(1, w.BucketMinutes))
		s.minutesPerBucket = float64(w.BucketMinutes)
		switch w.BucketMinutes {
		case 1:
			s.bucket, s.bucketDistinct = "minute", in.DistinctPerMinute
		case 60:
			s.bucket, s.bucketDistinct = "hour", in.DistinctPerHour
		default:
			s.bucket, s.bucketDistinct = "day", in.DistinctPerDay
		}
		s.minutes = float64(w.LengthMinutes)
	case windowset.Calendar:
		s.bucket = string(w.Span)
		switch {
		case w.Span == model.Month:
			s.minutes = monthMinutes // --month-days
		case w.Span.Valid():
			s.minutes = w.Span.Nominal().Minutes()
		}
	case windowset.Decayed:
		h := float64(max(1, w.HalfLifeMinutes))
		s.bucket = "score an item"
		s.minutes = DecayedHorizonHalfLives * h
		s.massMinutes = h / math.Ln2
	default:
		s.bucket, s.minutes = "month of history", monthMinutes
	}
	s.windowDistinct = in.distinctOver(s.minutes)
	s.mode = w.Mode
	if s.mode == "" || s.mode == windowset.Auto {
		s.mode = windowset.Exact
		if s.minutes > 1440 || w.Kind == windowset.AllTime {
			s.mode = windowset.Sketch
		}
	}
	return s
}

// distinctOver estimates the distinct items of a span of minutes from the distinct counts of
// its parts: the next larger measured bucket's count, or as many of the smaller as fit,
// whichever is less (an upper bound: a longer span holds at most the items of its parts).
func (in Input) distinctOver(minutes float64) float64 {
	monthMinutes := float64(in.MonthDays) * 1440
	switch {
	case minutes <= 1:
		return in.DistinctPerMinute
	case minutes <= 60:
		return math.Min(math.Ceil(minutes)*in.DistinctPerMinute, in.DistinctPerHour)
	case minutes <= 1440:
		return math.Min(math.Ceil(minutes/60)*in.DistinctPerHour, in.DistinctPerDay)
	case minutes <= monthMinutes:
		return math.Min(math.Ceil(minutes/1440)*in.DistinctPerDay, in.DistinctPerMonth)
	}
	return math.Ceil(minutes/monthMinutes) * in.DistinctPerMonth
}

// size works out one window and adds it to the plan.
func (pl *Plan) size(s spec, sketch, maxCounter float64) {
	in := pl.Input
	p := float64(in.Partitions)
	monthMinutes := float64(in.MonthDays) * 1440
	w := WindowPlan{Window: s.name, Bucket: s.bucket, Buckets: s.buckets, Kind: s.kind, Configured: s.configured}
	minutes := s.minutes
	if minutes == 0 {
		minutes = float64(s.buckets) * s.minutesPerBucket
	}
	// One count map per bucket, so the oldest can be subtracted, plus running totals for
	// the window; a calendar or all-time window has the totals only.
	w.ExactBytes = float64(s.buckets)*s.bucketDistinct*in.EntryBytes + s.windowDistinct*in.EntryBytes
	w.ExactPerPartition = w.ExactBytes / p

	mass := minutes
	if s.massMinutes > 0 {
		mass = s.massMinutes
	}
	scale := mass / monthMinutes
	n := in.EventsPerDay * mass / 1440 / p
	b := &Bound{
		N:           n,
		Overcount:   math.E / float64(in.SketchWidth) * n,
		Probability: 1 - math.Exp(-float64(in.SketchDepth)),
		KthCount:    in.KthCount * scale,
	}
	b.FractionOfKth = b.Overcount / b.KthCount
	// Candidates: an item joins when its estimate passes the floor, and an estimate is at
	// most true + overcount, so (with the bound's probability) only items whose true
	// count passes floor - overcount join; the counts of one partition sum to N, so
	// there are at most N / (floor - overcount) of them, and never more than the
	// partition's distinct items.
	floor := in.CandidateFloor * scale
	perPartDistinct := s.windowDistinct / p
	w.Candidates = perPartDistinct
	if floor > b.Overcount {
		w.Candidates = math.Min(math.Ceil(n/(floor-b.Overcount)), perPartDistinct)
	}
	w.Sketches = s.buckets + 2
	if s.kind == windowset.Calendar || s.kind == windowset.AllTime || s.kind == windowset.Decayed {
		w.Sketches = 1 // the running sketch: never subtracted, so no buckets
	}
	w.CandidateBytes = w.Candidates * in.EntryBytes
	w.SketchPerPartition = float64(w.Sketches)*sketch + w.CandidateBytes
	w.SketchBytes = w.SketchPerPartition * p
	w.ExactToSketch = w.ExactBytes / w.SketchBytes

	pl.decide(&w)
	if s.mode == windowset.Frequent {
		w.Frequent = pl.frequent(s, b)
		w.Why = fmt.Sprintf("configured frequent: %d counters a summary keep every count within %s views (N/(m+1)) and miss no item with more; the budgets say %s",
			w.Frequent.Capacity, FormatCount(w.Frequent.Bound), w.Why)
		w.Mode, w.ChosenPerPartition, w.ChosenBytes = windowset.Frequent, w.Frequent.PerPart, w.Frequent.Bytes
	}
	if s.mode != "" && s.mode != w.Mode {
		// A configured window runs as configured; the budgets' verdict is the reason.
		w.Why = fmt.Sprintf("configured %s (%s); the budgets say %s", s.mode, s.configured, w.Why)
		if s.mode == windowset.Exact && (w.ExactPerPartition > in.MemoryBudgetPerPartition || w.ExactBytes > in.MemoryBudgetTotal) {
			pl.warnf("%s: configured exact needs %s per partition and %s in all, over budget: configure it sketch or add partitions",
				w.Window, FormatBytes(w.ExactPerPartition), FormatBytes(w.ExactBytes))
		}
		w.Mode = s.mode
		if w.Mode == windowset.Exact {
			w.ChosenPerPartition, w.ChosenBytes = w.ExactPerPartition, w.ExactBytes
		} else {
			w.ChosenPerPartition, w.ChosenBytes = w.SketchPerPartition, w.SketchBytes
		}
	}
	if s.kind == windowset.AllTime {
		w.Why += "; sized for a month of history: exact totals grow with the catalog, a sketch's error with time"
	}
	if s.kind == windowset.Decayed {
		w.Why += fmt.Sprintf("; one score an item of the %s horizon (%d half-lives: a single view is forgotten after it), N the decayed views (%s minutes' worth, h/ln 2)",
			formatMinutes(minutes), DecayedHorizonHalfLives, sig3(s.massMinutes))
	}
	if w.Mode == windowset.Sketch {
		w.ErrorBound = b
		pl.sketchWarnings(w, floor, maxCounter)
	}
	pl.PerPartitionBytes += w.ChosenPerPartition
	pl.TotalBytes += w.ChosenBytes
	if in.Groups > 0 {
		w.Groups = pl.groups(s, w, n, floor)
		pl.PerPartitionBytes += w.Groups.PerPartition
		pl.TotalBytes += w.Groups.Bytes
		pl.GroupPerPartitionBytes += w.Groups.PerPartition
		pl.GroupBytes += w.Groups.Bytes
	}
	pl.Windows = append(pl.Windows, w)
}

// frequent sizes a frequent window: the configured capacity, or the smallest whose
// a-priori bound N/(m+1) is within the wanted fraction of the window's K-th count.
func (pl *Plan) frequent(s spec, b *Bound) *FrequentPlan {
	in := pl.Input
	f := &FrequentPlan{Capacity: s.capacity}
	if f.Capacity == 0 {
		frac := in.FrequentError
		if frac == 0 {
			frac = in.ErrorTolerance
		}
		f.Wanted = math.Max(1, math.Floor(frac*b.KthCount))
		f.Capacity = frequent.CapacityFor(uint64(math.Ceil(b.N)), uint64(f.Wanted))
		if f.Capacity > frequent.MaxCapacity {
			f.Capacity = frequent.MaxCapacity
			pl.warnf("%s: a bound of %s views needs more than %d counters: it will be %s", s.name, FormatCount(f.Wanted), frequent.MaxCapacity,
				FormatCount(b.N/float64(frequent.MaxCapacity+1)))
		}
	}
	f.Bound = b.N / float64(f.Capacity+1)
	f.Summaries = 1
	if s.kind == windowset.Sliding {
		f.Summaries = 2*s.buckets + 2 // the buckets and their suffix merges, the back's merge and the running bucket
	}
	f.PerPart = float64(f.Summaries) * float64(f.Capacity) * FrequentCounterBytes
	f.Bytes = f.PerPart * float64(in.Partitions)
	return f
}

// groups works out the lists per group value of a window w (arithmetic s) counted in w's
// mode: exact, the window's entries times the pairs per item (spread over the groups: one
// group holds its share); sketch, every group the window's sketches at the group width and a
// candidate set as large as the window's, with the largest group's error bound. n and floor
// are the window's N per partition and candidate floor.
func (pl *Plan) groups(s spec, w WindowPlan, n, floor float64) *GroupPlan {
	in := pl.Input
	p, g := float64(in.Partitions), float64(in.Groups)
	gp := &GroupPlan{Groups: in.Groups, Pairs: in.GroupPairs}
	if w.Mode == windowset.Exact {
		gp.PerPartition = w.ExactPerPartition * in.GroupPairs
	} else {
		sk := float64(in.SketchDepth) * float64(in.GroupSketchWidth) * float64(in.CounterBytes)
		pl.GroupSketchBytes = sk
		gp.PerPartition = g * (float64(w.Sketches)*sk + w.CandidateBytes)
		ng := n * in.GroupShare
		b := &Bound{N: ng, Overcount: math.E / float64(in.GroupSketchWidth) * ng, Probability: 1 - math.Exp(-float64(in.SketchDepth))}
		if w.ErrorBound != nil {
			// The K-th count of the largest group: its share of the window's.
			b.KthCount = w.ErrorBound.KthCount * in.GroupShare
			b.FractionOfKth = b.Overcount / b.KthCount
		}
		gp.ErrorBound = b
		if floor*in.GroupShare <= 2*b.Overcount {
			pl.warnf("%s per group: the largest group's candidate floor (%s) is not well above its sketches' overcount (%s): widen --group-sketch-width",
				w.Window, FormatCount(floor*in.GroupShare), FormatCount(b.Overcount))
		}
	}
	gp.PerGroupPerPartition = gp.PerPartition / g
	gp.Bytes = gp.PerPartition * p
	return gp
}

// decide picks the mode of w and writes its one-line reason.
func (pl *Plan) decide(w *WindowPlan) {
	in := pl.Input
	per, total := FormatSize(in.MemoryBudgetPerPartition), FormatSize(in.MemoryBudgetTotal)
	fitsPart := w.ExactPerPartition <= in.MemoryBudgetPerPartition
	fitsTotal := w.ExactBytes <= in.MemoryBudgetTotal
	switch {
	case fitsPart && fitsTotal:
		w.Mode = windowset.Exact
		w.Why = fmt.Sprintf("exact: %s per partition fits the %s budget, %s in all the %s total",
			FormatBytes(w.ExactPerPartition), per, FormatBytes(w.ExactBytes), total)
	case w.SketchPerPartition >= w.ExactPerPartition:
		w.Mode = windowset.Exact
		w.Why = fmt.Sprintf("exact: over budget at %s per partition, but sketches would take more (%s)",
			FormatBytes(w.ExactPerPartition), FormatBytes(w.SketchPerPartition))
		pl.warnf("%s: exact counts need %s per partition and %s in all, over budget, and sketches would not be smaller: add partitions or raise the budget",
			w.Window, FormatBytes(w.ExactPerPartition), FormatBytes(w.ExactBytes))
	case !fitsPart:
		w.Mode = windowset.Sketch
		w.Why = fmt.Sprintf("sketch: exact needs %s per partition, over the %s budget; sketches take %s, %sx less",
			FormatBytes(w.ExactPerPartition), per, FormatBytes(w.SketchPerPartition), sig3(w.ExactToSketch))
	default:
		w.Mode = windowset.Sketch
		w.Why = fmt.Sprintf("sketch: exact needs %s in all, over the %s total budget (%s per partition would fit); sketches take %s, %sx less",
			FormatBytes(w.ExactBytes), total, FormatBytes(w.ExactPerPartition), FormatBytes(w.SketchBytes), sig3(w.ExactToSketch))
	}
	if w.Mode == windowset.Exact {
		w.ChosenPerPartition, w.ChosenBytes = w.ExactPerPartition, w.ExactBytes
	} else {
		w.ChosenPerPartition, w.ChosenBytes = w.SketchPerPartition, w.SketchBytes
		if w.SketchPerPartition > in.MemoryBudgetPerPartition {
			pl.warnf("%s: even sketches need %s per partition, over the %s budget: add partitions or narrow the sketch",
				w.Window, FormatBytes(w.SketchPerPartition), per)
		}
	}
}

// sketchWarnings flags a sketch window whose guarantee is weaker than the input asks for.
func (pl *Plan) sketchWarnings(w WindowPlan, floor, maxCounter float64) {
	b, in := w.ErrorBound, pl.Input
	if b.FractionOfKth > in.ErrorTolerance {
		pl.warnf("%s: the sketch may overcount by %s, %s of the K-th count, over the %s tolerance: widen the sketch or add partitions",
			w.Window, FormatCount(b.Overcount), FormatPercent(b.FractionOfKth), FormatPercent(in.ErrorTolerance))
	}
	if floor <= 2*b.Overcount {
		pl.warnf("%s: the candidate floor (%s) is not well above the overcount (%s): noise will fill the candidate set; widen the sketch or raise the floor",
			w.Window, FormatCount(floor), FormatCount(b.Overcount))
	}
	if b.N > maxCounter {
		pl.warnf("%s: a partition adds %s to the window, more than a %d-byte counter holds (%s): use 8-byte or saturating counters",
			w.Window, FormatCount(b.N), in.CounterBytes, FormatCount(maxCounter))
	}
}

func (pl *Plan) warnf(format string, args ...any) {
	pl.Warnings = append(pl.Warnings, fmt.Sprintf(format, args...))
}

// formatMinutes prints a span of minutes as days, hours and minutes: 600 is 10h, 2160 1d12h.
func formatMinutes(m float64) string {
	n := int64(math.Round(m))
	var b strings.Builder
	if d := n / 1440; d > 0 {
		fmt.Fprintf(&b, "%dd", d)
	}
	if h := n % 1440 / 60; h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if mm := n % 60; mm > 0 || b.Len() == 0 {
		fmt.Fprintf(&b, "%dm", mm)
	}
	return b.String()
}

// archivePlan is the archive's size from the events a day, the views an event holds, the
// bytes an event takes and the retention.
func archivePlan(in Input) ArchivePlan {
	views, per, days := in.ViewsPerEvent, in.ArchiveBytesPerEvent, in.RetentionDays
	if views == 0 {
		views = 1
	}
	if per == 0 {
		per = MeasuredArchiveBytesPerEvent
	}
	if days == 0 {
		days = 365
	}
	a := ArchivePlan{RowsPerDay: in.EventsPerDay / views, BytesPerEvent: per, RetentionDays: days}
	a.BytesPerDay = a.RowsPerDay * per
	a.RetentionBytes = a.BytesPerDay * float64(days)
	a.SeedBytesPerDay = a.RowsPerDay * SeedArchiveBytesPerEvent
	a.SeedRetentionBytes = a.SeedBytesPerDay * float64(days)
	return a
}
