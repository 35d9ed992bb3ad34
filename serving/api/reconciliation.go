package api

import (
	"cmp"
	"encoding/json"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"
	"trending/model"
)

// LevelReconciliation is the newest reconciliation of one window level: how far the speed
// layer's list of the newest exact calendar window carrying one was from the batch layer's
// exact list, and against the bound the speed list stated. It is what GET
// /v1/reconciliation lists and what the trending_reconciliation_* metrics export.
type LevelReconciliation struct {
	// Level is hour, day or month, or a trending-topics list topics/<region>/<score> (its
	// exact lists are of closed hours).
	Level          string               `json:"level"`
	Start          time.Time            `json:"start"`
	End            time.Time            `json:"end"`
	Version        int64                `json:"version"` // the exact list's
	ComputedAt     time.Time            `json:"computed_at"`
	Reconciliation model.Reconciliation `json:"reconciliation"`
	// ErrorOverBound is max_abs_error over the speed list's max_overcount, and WithinBound
	// whether that is at most 1; both absent when the speed list stated no bound (exact
	// counts). ErrorOverBound is also absent when the bound was 0 and the error was not.
	ErrorOverBound *float64 `json:"error_over_bound,omitempty"`
	WithinBound    *bool    `json:"within_bound,omitempty"`
}

// ReconciliationResponse is the JSON body of GET /v1/reconciliation: one entry per level
// that has a reconciled exact window, calendar levels first (hour, day, month), then the
// topics lists by name.
type ReconciliationResponse struct {
	Now    time.Time             `json:"now"`
	Levels []LevelReconciliation `json:"levels"`
}

// reconciliations returns the newest reconciliation of each level in the current snapshot:
// per window name, the exact calendar list with the latest start that carries one. The lists
// per group value carry theirs in their own bodies only: a level per region and span would
// make the summary (and the metrics' label set) as long as the configured groups.
func (c *Cache) reconciliations() []LevelReconciliation {
	newest := map[string]*model.List{}
	for k, e := range c.snap.Load().lists {
		l := &e.list
		if k.start == liveStart || l.Source != model.SourceBatch || l.Reconciliation == nil {
			continue
		}
		if lk := l.Key(); lk.Group != "" && !lk.IsTopics() {
			continue
		}
		if cur := newest[k.window]; cur == nil || l.Start.After(cur.Start) {
			newest[k.window] = l
		}
	}
	out := make([]LevelReconciliation, 0, len(newest))
	for level, l := range newest {
		lr := LevelReconciliation{Level: level, Start: l.Start.UTC(), End: l.End.UTC(), Version: l.Version,
			ComputedAt: l.ComputedAt.UTC(), Reconciliation: *l.Reconciliation}
		if r, ok := l.Reconciliation.ErrorOverBound(); ok {
			within := r <= 1
			lr.WithinBound = &within
			if !math.IsInf(r, 0) {
				lr.ErrorOverBound = &r
			}
		}
		out = append(out, lr)
	}
	slices.SortFunc(out, func(a, b LevelReconciliation) int {
		return cmp.Or(cmp.Compare(levelRank(a.Level), levelRank(b.Level)), strings.Compare(a.Level, b.Level))
	})
	return out
}

// levelRank orders the calendar levels hour, day, week, month before the topics lists.
func levelRank(level string) int {
	if i := model.Period(level).Index(); i >= 0 {
		return i
	}
	return len(model.Periods)
}

// handleReconciliation serves the newest reconciliation of each level, built from the cache
// per request (a handful of entries).
func (s *Server) handleReconciliation(w http.ResponseWriter, r *http.Request) {
	if !s.cache.Loaded() {
		writeError(w, notReady(s.cache.Ready()))
		return
	}
	body, err := json.Marshal(ReconciliationResponse{Now: s.cfg.Now().UTC().Truncate(time.Second), Levels: s.cache.reconciliations()})
	if err != nil {
		panic("BUG: encode reconciliation: " + err.Error())
	}
	writeBody(w, r, http.StatusOK, body)
}
