package api

import (
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"trending/model"
	"trending/serving/store/storetest"
)

// reconGauges gathers the trending_reconciliation_* gauges: name (without the prefix) ->
// level -> value.
func reconGauges(t *testing.T, f *fixture) map[string]map[string]float64 {
	t.Helper()
	mfs, err := f.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		name, ok := strings.CutPrefix(mf.GetName(), "trending_reconciliation_")
		if !ok {
			continue
		}
		out[name] = map[string]float64{}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetName() != "level" {
				t.Fatalf("%s: labels %v, want level only", mf.GetName(), m.GetLabel())
			}
			out[name][m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	return out
}

// TestReconciliationMetrics: per level, the gauges come from the newest exact calendar list
// that carries a reconciliation (a newer exact list without one, an older one with one and
// speed lists are ignored), with the error against the bound only where the speed list
// stated one.
func TestReconciliationMetrics(t *testing.T) {
	f := newFixture(t, nil)
	t0 := storetest.T0
	older := storetest.MakeList("hour", t0.Add(-2*time.Hour), 100, model.SourceBatch, 5, 50)
	older.Reconciliation = &model.Reconciliation{SpeedVersion: 28, RecallAtK: 0.5, MaxAbsError: 99, MeanAbsError: 9, MaxRelError: 0.5}
	unreconciled := storetest.MakeList("hour", t0, 100, model.SourceBatch, 5, 50) // replaced nothing: no reconciliation
	day := storetest.MakeList("day", model.Day.Align(t0).AddDate(0, 0, -1), 100, model.SourceBatch, 5, 50)
	day.Reconciliation = &model.Reconciliation{SpeedVersion: 27, RecallAtK: 1, MeanAbsError: 0, SpeedErrorBound: &model.Bound{MaxOvercount: 0, Probability: 0.99}}
	for _, l := range []model.List{older, unreconciled, day} {
		if err := f.st.Put(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.srv.Cache().Refresh(context.Background(), true); err != nil {
		t.Fatal(err)
	}

	hour, month := t0.Add(-time.Hour), model.Month.Align(t0).AddDate(0, -1, 0)
	topicsEU := model.TopicsKey("eu", "surge").Name()
	ts := func(t time.Time) float64 { return float64(t.Unix()) }
	want := map[string]map[string]float64{
		// hour: the fixture's batch hour t0-1h (speed list exact, so no bound); day: a bound of
		// 0 with no error is within it; month: 300 off against a bound of 250; topics: 5
		// against 20.
		"recall_at_k":         {"hour": 0.9, "day": 1, "month": 0.95, topicsEU: 1},
		"max_abs_error":       {"hour": 12, "day": 0, "month": 300, topicsEU: 5},
		"mean_abs_error":      {"hour": 3.5, "day": 0, "month": 40, topicsEU: 5},
		"max_rel_error":       {"hour": 0.02, "day": 0, "month": 0.01, topicsEU: 0.002},
		"bound_max_overcount": {"day": 0, "month": 250, topicsEU: 20},
		"error_over_bound":    {"day": 0, "month": 1.2, topicsEU: 0.25},
		// every level, exact speed lists included: the fixture's hour lost 4 late events.
		"dropped_late": {"hour": 4, "day": 0, "month": 0, topicsEU: 0},
		"window_start_timestamp_seconds": {"hour": ts(hour), "day": ts(model.Day.Align(t0).AddDate(0, 0, -1)),
			"month": ts(month), topicsEU: ts(hour)},
	}
	got := reconGauges(t, f)
	for _, name := range slices.Sorted(maps.Keys(want)) {
		if !maps.Equal(got[name], want[name]) {
			t.Errorf("trending_reconciliation_%s = %v, want %v", name, got[name], want[name])
		}
	}
	if len(got) != len(want) {
		t.Errorf("gauges %v, want exactly %v", slices.Sorted(maps.Keys(got)), slices.Sorted(maps.Keys(want)))
	}

	// The route says the same, in level order, with the bound's verdict.
	w := f.get("/v1/reconciliation")
	if w.Code != 200 {
		t.Fatalf("/v1/reconciliation: %d %s", w.Code, w.Body)
	}
	resp := decode[ReconciliationResponse](t, w)
	var levels []string
	for _, lr := range resp.Levels {
		levels = append(levels, lr.Level)
	}
	if !slices.Equal(levels, []string{"hour", "day", "month", topicsEU}) {
		t.Fatalf("levels %v", levels)
	}
	h, m := resp.Levels[0], resp.Levels[2]
	if !h.Start.Equal(hour) || !h.End.Equal(t0) || h.Version != 100 || h.Reconciliation.MaxAbsError != 12 || h.ErrorOverBound != nil || h.WithinBound != nil {
		t.Errorf("hour %+v", h)
	}
	if m.ErrorOverBound == nil || *m.ErrorOverBound != 1.2 || m.WithinBound == nil || *m.WithinBound ||
		m.Reconciliation.SpeedErrorBound == nil || m.Reconciliation.SpeedErrorBound.MaxOvercount != 250 {
		t.Errorf("month %+v", m)
	}
	if tp := resp.Levels[3]; tp.WithinBound == nil || !*tp.WithinBound || *tp.ErrorOverBound != 0.25 {
		t.Errorf("topics %+v", tp)
	}
}

// TestReconciliationZeroBound: an error against a bound of 0 is +Inf on /metrics (an alert on
// > 1 fires) and, JSON having no infinity, outside the bound without a ratio on the route.
func TestReconciliationZeroBound(t *testing.T) {
	f := newFixture(t, nil)
	day := storetest.MakeList("day", model.Day.Align(storetest.T0).AddDate(0, 0, -1), 100, model.SourceBatch, 5, 50)
	day.Reconciliation = &model.Reconciliation{SpeedVersion: 27, RecallAtK: 1, MaxAbsError: 3, SpeedErrorBound: &model.Bound{Probability: 0.99}}
	if err := f.st.Put(context.Background(), day); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Cache().Refresh(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	if v := reconGauges(t, f)["error_over_bound"]["day"]; !math.IsInf(v, 1) {
		t.Fatalf("error_over_bound{day} = %v, want +Inf", v)
	}
	resp := decode[ReconciliationResponse](t, f.get("/v1/reconciliation"))
	if d := resp.Levels[1]; d.Level != "day" || d.ErrorOverBound != nil || d.WithinBound == nil || *d.WithinBound {
		t.Fatalf("day %+v", d)
	}
}
