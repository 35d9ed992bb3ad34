package batch

import (
	"context"
	"errors"
	"time"
	"trending/model"
)

// PlanEntry is one window of a dry run: what it would read and whether it may run.
type PlanEntry struct {
	Window  Window
	Hours   int   // archive hours it covers
	Objects int   // Parquet objects under those hours
	Bytes   int64 // their size
	Open    error // nil when closed; ErrWindowOpen with the reason otherwise
}

// Plan lists what Run would read for windows, without building or writing anything. The
// input of a day or month is the sum of its hours' objects (what a cold run reads; a warm
// run reuses current hour rollups).
// It writes nothing, and reads the engine only to plan all time (a nil engine has no rollups).
func (r *Runner) Plan(ctx context.Context, windows []Window) ([]PlanEntry, error) {
	x := r.newRun()
	type hourSize struct {
		n     int
		bytes int64
	}
	sizes := map[time.Time]hourSize{}
	out := make([]PlanEntry, 0, len(windows))
	for _, w := range windows {
		e := PlanEntry{Window: w}
		if err := r.Closed(ctx, w); err != nil {
			if !errors.Is(err, ErrWindowOpen) {
				return nil, err
			}
			e.Open = err
		}
		var hours []Window
		if w.Level == All {
			var months []time.Time
			if r.eng != nil { // a dry run without a rollup file: nothing rolled up yet
				var err error
				if months, err = r.eng.Months(ctx); err != nil {
					return nil, err
				}
			}
			for _, m := range months {
				hours = append(hours, Window{Month, m}.Hours(x.through(Window{Month, m}))...)
			}
		} else {
			hours = w.Hours(x.through(w))
		}
		for _, h := range hours {
			s, ok := sizes[h.Start]
			if !ok {
				objs, err := r.arc.ListHour(ctx, h.Start)
				if err != nil {
					return nil, err
				}
				s.n = len(objs)
				for _, o := range objs {
					s.bytes += o.Size
				}
				sizes[h.Start] = s
			}
			e.Hours++
			e.Objects += s.n
			e.Bytes += s.bytes
		}
		out = append(out, e)
	}
	return out, nil
}

// State says how exact a window's served list is.
type State string

const (
	StateExact       State = "exact"       // batch list of the archive's current contents
	StateDirty       State = "dirty"       // batch list, but the archive changed since (late data): a run recomputes it
	StateLive        State = "live"        // the speed layer's list of a window still open
	StateProvisional State = "provisional" // the speed layer's final list of a closed window, late events may be missing
	StateMissing     State = "missing"     // no list at all
)

// StatusEntry is one window's row of `trending batch status`.
type StatusEntry struct {
	Window      Window
	State       State
	List        *model.List // the served list, if any
	Fingerprint string      // the archive's current fingerprint of the window's inputs
	Rollup      *Meta       // the engine's rollup record, if any
}

// Status reports, for every window of the given levels starting in [from, to), whether its
// served list is exact, dirty (exact but the archive changed since), live, provisional or
// missing.
func (r *Runner) Status(ctx context.Context, levels []string, from, to time.Time) ([]StatusEntry, error) {
	x := r.newRun()
	var out []StatusEntry
	for _, lv := range levels {
		if lv == All {
			continue // live list: its state is in `trending batch status` of months
		}
		ws, err := Span(lv, from, to)
		if err != nil {
			return nil, err
		}
		lists, err := r.store.Range(ctx, lv, ws[0].Start, ws[len(ws)-1].End())
		if err != nil {
			return nil, err
		}
		byStart := map[int64]model.List{}
		for _, l := range lists {
			byStart[l.Start.Unix()] = l
		}
		for _, w := range ws {
			e := StatusEntry{Window: w, State: StateMissing}
			if m, err := r.eng.Meta(ctx, lv, w.Start); err == nil {
				e.Rollup = &m
			} else if !errors.Is(err, ErrNoRollup) {
				return nil, err
			}
			if w.End().After(x.closed) {
				e.Fingerprint = "" // open: the archive is still filling it
			} else if e.Fingerprint, err = x.currentFingerprint(ctx, w); err != nil {
				return nil, err
			}
			if l, ok := byStart[w.Start.Unix()]; ok {
				e.List = &l
				switch {
				case l.Source == model.SourceSpeed && l.Status == model.StatusProvisional:
					e.State = StateProvisional
				case l.Source == model.SourceSpeed:
					e.State = StateLive
				case e.Fingerprint != "" && l.Fingerprint != x.listFP(e.Fingerprint):
					e.State = StateDirty
				default:
					e.State = StateExact
				}
			}
			out = append(out, e)
		}
	}
	return out, nil
}

// currentFingerprint is the archive's fingerprint of a closed window's inputs, computed as
// a run would (hours combined upward), without building anything.
func (x *run) currentFingerprint(ctx context.Context, w Window) (string, error) {
	if w.Level == Hour {
		if err := x.hourFingerprints(ctx, []Window{w}); err != nil {
			return "", err
		}
		return x.fp(w.Start), nil
	}
	kids := w.Children(x.through(w))
	fps := make([]string, len(kids))
	for i, k := range kids {
		fp, err := x.currentFingerprint(ctx, k)
		if err != nil {
			return "", err
		}
		fps[i] = fp
	}
	return Combine(kids, fps), nil
}
