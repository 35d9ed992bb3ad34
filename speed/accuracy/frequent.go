package accuracy

import (
	"context"
	"fmt"
	"time"

	"trending/internal/stream"
	"trending/model/event"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/speed/frequent"
	"trending/speed/window"
)

// PairBytes is what a frequent-items counter is taken to cost when the head
// to head sizes the summary to the count-min sketch's memory: the item's
// bytes, its string header, the counter and the map entry
// (frequent.Summary.Bytes counts 56 bytes plus the item; the stream's ids
// are "V" and up to 7 digits).
const PairBytes = 64

// CapacityForMemory returns the frequent-items capacity whose closed bucket
// takes the memory of one width x depth count-min bucket (8 bytes a cell),
// at PairBytes a counter.
func CapacityForMemory(width, depth int) int {
	return max(1, width*depth*8/PairBytes)
}

// FrequentReport is the outcome of RunFrequent: the count-min sketch mode
// and the frequent-items mode at the same memory per bucket, on the same
// stream, window by window.
type FrequentReport struct {
	Items      int     `json:"items"`
	Zipf       float64 `json:"zipf"`
	Seed       uint64  `json:"seed"`
	Span       string  `json:"span"`
	Views      uint64  `json:"views"`
	Partitions int     `json:"partitions"`
	K          int     `json:"k"`
	M          int     `json:"m"`
	// SketchWidth x SketchDepth is the count-min shape, SketchBytes one
	// bucket's counters.
	SketchWidth int `json:"sketch_width"`
	SketchDepth int `json:"sketch_depth"`
	SketchBytes int `json:"sketch_bytes"`
	// Capacity is the summaries' m; SummaryBytes the largest closed minute
	// summary measured (frequent.Summary.Bytes), against SketchBytes.
	Capacity     int           `json:"capacity"`
	SummaryBytes int           `json:"summary_bytes"`
	Rows         []FrequentRow `json:"rows"`
	Elapsed      time.Duration `json:"elapsed_ns"`
}

// FrequentRow is one window at one point of the stream in one mode.
type FrequentRow struct {
	Window string         `json:"window"`
	At     string         `json:"at"`
	Mode   windowset.Mode `json:"mode"` // windowset.Sketch, or "frequent"
	// KthCount is the true K-th count, N the window's views.
	KthCount uint64 `json:"kth_count"`
	N        uint64 `json:"n"`
	// Recall and Precision at K of the merged list.
	Recall    float64 `json:"recall"`
	Precision float64 `json:"precision"`
	// MaxError is the largest |reported - true| of a reported item
	// (count-min: the overcount; frequent: true minus the lower bound).
	MaxError uint64 `json:"max_error"`
	// Bound is the stated bound, the largest over partitions: count-min
	// (e/w) x N at probability 1-e^-d; frequent the summary's offset D, a
	// guarantee. Apriori is frequent's N/(m+1) of the largest partition.
	Bound   float64 `json:"bound"`
	Apriori float64 `json:"apriori,omitempty"`
	// Broken counts reported items outside their stated bound (count-min:
	// overcount above its bound, allowed for a fraction e^-d; frequent:
	// true count outside [lower, upper], never allowed), plus for frequent
	// the items of the truth with more than D views that the summary
	// lacks, which the guarantee also forbids.
	Broken int `json:"broken"`
	// MissingHeavy is how many items with at least twice the K-th count
	// are not listed.
	MissingHeavy int `json:"missing_heavy"`
}

// FrequentMode is the Mode RunFrequent's rows give the frequent-items side.
const FrequentMode windowset.Mode = "frequent"

// RunFrequent runs cfg's stream through, per partition, the real window
// code in sketch mode (a sliding hour of 60 minute buckets and the all-time
// window, count-min sketches of cfg.Window.Sketch's shape) and, beside it,
// a frequent-items summary per closed minute (capacity, or
// CapacityForMemory of the sketch's shape when 0) whose hour is the merge of
// its 60 buckets and whose all-time summary is the merge of every minute.
// At cfg.Points points it merges the partitions' top M x K lists as the
// merger does and measures both against the truth. Late events and
// lateness are off, so both sides close the same minutes.
func RunFrequent(ctx context.Context, cfg Config, capacity int) (FrequentReport, error) {
	began := time.Now()
	cfg.Stream.Late = 0
	cfg.Window.AllowedLateness = 0
	cfg.Window.SinceDays = 0
	cfg.Window.Windows = []window.WindowConfig{
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Sketch},
		{Name: "all", Kind: windowset.AllTime, Mode: windowset.Sketch},
	}
	if err := cfg.Validate(); err != nil {
		return FrequentReport{}, err
	}
	cfg = cfg.derived()
	if capacity == 0 {
		capacity = CapacityForMemory(cfg.Window.Sketch.Width, cfg.Window.Sketch.Depth)
	}
	if err := (frequent.Config{Capacity: capacity}).Validate(); err != nil {
		return FrequentReport{}, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	gen, err := stream.NewGenerator(cfg.Stream)
	if err != nil {
		return FrequentReport{}, err
	}
	sc := gen.Config()
	h := &fhead{cfg: cfg, m: capacity, truth: stream.NewTruth()}
	for range cfg.Partitions {
		p, err := window.New(cfg.Window)
		if err != nil {
			return FrequentReport{}, err
		}
		all, _ := frequent.New(frequent.Config{Capacity: capacity})
		h.parts = append(h.parts, p)
		h.freq = append(h.freq, &fpart{buckets: map[time.Time]*frequent.Summary{}, all: all, open: time.Time{}})
	}
	wcfg := h.parts[0].Config()
	rep := FrequentReport{
		Items: sc.Items, Zipf: sc.Zipf, Seed: sc.Seed, Span: stream.FormatSpan(cfg.Span), Partitions: cfg.Partitions,
		K: wcfg.K, M: wcfg.M, SketchWidth: wcfg.Sketch.Width, SketchDepth: wcfg.Sketch.Depth,
		SketchBytes: wcfg.Sketch.Bytes(), Capacity: capacity,
	}
	seconds := int64(cfg.Span / time.Second)
	next := 1
	var recs []stream.Record
	for sec := int64(1); ; sec++ {
		var ok bool
		if recs, ok = gen.NextSecond(recs[:0]); !ok {
			break
		}
		for _, r := range recs {
			h.add(r.Event)
		}
		for next <= cfg.Points && sec >= seconds*int64(next)/int64(cfg.Points) {
			if err := ctx.Err(); err != nil {
				return FrequentReport{}, err
			}
			rows, err := h.point(fmt.Sprintf("%d%%", 100*next/cfg.Points))
			if err != nil {
				return FrequentReport{}, err
			}
			rep.Rows = append(rep.Rows, rows...)
			next++
		}
	}
	rep.Views = h.truth.Views()
	rep.SummaryBytes = h.maxBytes
	rep.Elapsed = time.Since(began)
	return rep, nil
}

type fpart struct {
	open    time.Time                       // the open minute
	cur     *frequent.Summary               // its summary
	buckets map[time.Time]*frequent.Summary // closed minutes of the last hour
	all     *frequent.Summary               // every closed minute
}

type fhead struct {
	cfg      Config
	m        int
	truth    *stream.Truth
	parts    []*window.Partition
	freq     []*fpart
	maxBytes int
}

func (h *fhead) add(ev event.Event) {
	h.truth.Add(ev)
	p := stream.PartitionOf(ev.ItemID, len(h.parts))
	h.parts[p].Add(ev)
	f := h.freq[p]
	minute := ev.TS.Truncate(time.Minute)
	if f.cur == nil || minute.After(f.open) {
		h.close(f)
		f.open = minute
		f.cur, _ = frequent.New(frequent.Config{Capacity: h.m})
	}
	f.cur.AddString(ev.ItemID, uint64(ev.Count))
}

// close turns the open minute into a closed bucket, as the window core's
// watermark does with no lateness.
func (h *fhead) close(f *fpart) {
	if f.cur == nil {
		return
	}
	f.cur.Compact()
	h.maxBytes = max(h.maxBytes, f.cur.Bytes())
	f.buckets[f.open] = f.cur
	if err := f.all.Merge(f.cur); err != nil {
		panic("BUG: accuracy: merge of equal capacities failed: " + err.Error())
	}
	f.all.Compact()
	for t := range f.buckets {
		if !t.After(f.open.Add(-time.Hour)) {
			delete(f.buckets, t)
		}
	}
	f.cur = nil
}

// point measures both modes' hour and all-time lists.
func (h *fhead) point(at string) ([]FrequentRow, error) {
	var rows []FrequentRow
	for _, name := range []string{"hour", "all"} {
		var cm, fq []partList
		var fsum []*frequent.Summary
		var c stream.Counts
		for p, part := range h.parts {
			l, err := part.Top(name)
			if err != nil {
				return nil, err
			}
			from, to := l.Start, minTime(l.End, l.AsOf)
			c = h.truth.Range(from, to)
			tops := topsByPartition(c, h.cfg.Window.K, len(h.parts))
			cm = append(cm, h.measureList(p, l, c, tops))
			s := h.freqOf(p, name, from, to)
			fsum = append(fsum, s)
			fl := window.List{Window: name, Start: l.Start, End: l.End, AsOf: l.AsOf, Total: s.Total()}
			for _, e := range s.Top(h.cfg.Window.M * h.cfg.Window.K) {
				fl.Items = append(fl.Items, topk.Entry{Item: e.Item, Count: e.Lower})
			}
			fq = append(fq, h.measureList(p, fl, c, tops))
		}
		k := h.cfg.Window.K
		r := compare(k, len(h.parts), cm)
		rows = append(rows, FrequentRow{Window: name, At: at, Mode: windowset.Sketch, KthCount: r.kth, N: r.n,
			Recall: r.recall, Precision: r.precision, MaxError: r.overMax, Bound: r.bound, Broken: r.overBound + r.under,
			MissingHeavy: len(r.missing)})
		rows = append(rows, h.frequentRow(name, at, fq, fsum, c))
	}
	return rows, nil
}

func (h *fhead) measureList(p int, l window.List, c stream.Counts, tops [][]topk.Entry) partList {
	pl := partList{part: p, list: l, trueTop: tops[p], trueOf: make(map[string]uint64, len(l.Items))}
	for _, e := range l.Items {
		pl.trueOf[e.Item] = c.Get(e.Item)
	}
	return pl
}

// freqOf returns partition p's frequent summary of window name over the
// closed minutes in [from, to).
func (h *fhead) freqOf(p int, name string, from, to time.Time) *frequent.Summary {
	f := h.freq[p]
	if name == "all" {
		return f.all
	}
	s, _ := frequent.New(frequent.Config{Capacity: h.m})
	// Merge in time order, as the window core would.
	for t := from; t.Before(to); t = t.Add(time.Minute) {
		if b, ok := f.buckets[t]; ok {
			if err := s.Merge(b); err != nil {
				panic("BUG: accuracy: merge of equal capacities failed: " + err.Error())
			}
		}
	}
	s.Compact()
	return s
}

// frequentRow measures the frequent side: recall as the count-min side's,
// the error of every reported lower bound, and the guarantee checked on
// every item of the truth, listed or not.
func (h *fhead) frequentRow(name, at string, fq []partList, sums []*frequent.Summary, c stream.Counts) FrequentRow {
	r := compare(h.cfg.Window.K, len(h.parts), fq)
	row := FrequentRow{Window: name, At: at, Mode: FrequentMode, KthCount: r.kth, N: r.n,
		Recall: r.recall, Precision: r.precision, MissingHeavy: len(r.missing)}
	for _, s := range sums {
		row.Bound = max(row.Bound, float64(s.MaxError()))
		row.Apriori = max(row.Apriori, float64(frequent.AprioriBound(s.Capacity(), s.Total())))
	}
	// Every item of the truth: lower <= true <= upper, and present when
	// above D.
	c.Each(func(item string, n uint64) {
		s := sums[stream.PartitionOf(item, len(sums))]
		lo, up := s.Lower(item), s.Upper(item)
		if lo > n || up < n || (n > s.MaxError() && lo == 0) {
			row.Broken++
		}
	})
	for _, pl := range fq {
		for _, e := range pl.list.Items {
			if t := pl.trueOf[e.Item]; t >= e.Count {
				row.MaxError = max(row.MaxError, t-e.Count)
			} else {
				row.MaxError = max(row.MaxError, e.Count-t)
			}
		}
	}
	return row
}

// Check returns the goals the frequent report missed: the guarantee never
// broken, and the frequent mode's recall at least the count-min mode's on
// every window and point.
func (r FrequentReport) Check() []string {
	var out []string
	for i, row := range r.Rows {
		if row.Mode != FrequentMode {
			continue
		}
		if row.Broken > 0 {
			out = append(out, fmt.Sprintf("%s at %s: %d items outside the frequent-items bound", row.Window, row.At, row.Broken))
		}
		if float64(row.MaxError) > row.Bound {
			out = append(out, fmt.Sprintf("%s at %s: error %d over the stated bound %.0f", row.Window, row.At, row.MaxError, row.Bound))
		}
		if i > 0 && r.Rows[i-1].Mode == windowset.Sketch && row.Recall < r.Rows[i-1].Recall {
			out = append(out, fmt.Sprintf("%s at %s: frequent recall %.3f below count-min's %.3f at the same memory",
				row.Window, row.At, row.Recall, r.Rows[i-1].Recall))
		}
	}
	return out
}
