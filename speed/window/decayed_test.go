package window

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
	"time"

	trmodel "trending/model"
	"trending/model/event"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/speed/sketch"
)

// decayedTestConfig is snapTestConfig plus decayed windows: exact with a 5-minute half-life
// (a 30-hour stream moves its epoch 5 times and forgets items every hour), exact with an
// hour's, and a sketch with 30 minutes.
func decayedTestConfig() Config {
	cfg := snapTestConfig()
	cfg.Windows = append(cfg.Windows,
		WindowConfig{Name: "now5", Kind: windowset.Decayed, HalfLife: 5 * time.Minute, Mode: windowset.Exact},
		WindowConfig{Name: "now", Kind: windowset.Decayed, HalfLife: time.Hour, Mode: windowset.Exact},
		WindowConfig{Name: "sk-now", Kind: windowset.Decayed, HalfLife: 30 * time.Minute, Mode: windowset.Sketch},
	)
	return cfg
}

// decayedTruth is the exact decayed score of every item at Unix millisecond t over the
// model's events of minutes before upTo: sum of c x 2^(-(t - minute start)/h), recomputed
// from scratch in float64.
func (md *model) decayedTruth(h time.Duration, t int64, upTo int64) map[string]float64 {
	out := map[string]float64{}
	for _, r := range md.recs {
		if r.outcome == Invalid || r.m >= upTo {
			continue
		}
		out[r.item] += float64(r.c) * math.Exp2(-float64(t-r.m*minuteMs)/float64(h.Milliseconds()))
	}
	return out
}

// decayedTol is how far a decayed score may be from the truth: what forgetting drops (less
// than 2^(1-ForgetHalfLives) views an item) and float rounding.
func decayedTol(truth float64) float64 { return math.Ldexp(1, 1-ForgetHalfLives) + 1e-9*truth }

// checkDecayedExact checks an exact decayed list against the truth: every score within
// decayedTol of its item's truth, and rank by rank within decayedTol of the truth's own
// ranking (so the list is the truth's top list, up to scores closer than the tolerance).
func checkDecayedExact(t *testing.T, what string, l List, truth map[string]float64, n int) {
	t.Helper()
	if l.HalfLife == 0 || len(l.Items) != 0 || !l.Exact || l.Bound != nil {
		t.Fatalf("%s: half-life %v, %d count items, exact %t, bound %v", what, l.HalfLife, len(l.Items), l.Exact, l.Bound)
	}
	want := make([]float64, 0, len(truth))
	for _, v := range truth {
		want = append(want, v)
	}
	slices.Sort(want)
	slices.Reverse(want)
	for i, e := range l.Scored {
		if i > 0 && topk.CompareScored(l.Scored[i-1], e) >= 0 {
			t.Fatalf("%s: not sorted at rank %d: %v", what, i+1, l.Scored)
		}
		if tr := truth[e.Item]; math.Abs(e.Score-tr) > decayedTol(tr) {
			t.Fatalf("%s: %s scores %v, truth %v", what, e.Item, e.Score, tr)
		}
		if math.Abs(e.Score-want[i]) > decayedTol(want[i]) {
			t.Fatalf("%s: rank %d scores %v, the truth's rank %d %v", what, i+1, e.Score, i+1, want[i])
		}
	}
	if k := len(l.Scored); k < n && k < len(want) && want[k] > decayedTol(want[k]) {
		t.Fatalf("%s: %d items listed, the truth has a next one at %v", what, k, want[k])
	}
}

// checkDecayedSketch checks a decayed sketch list: every estimate at least the truth (less
// the forgotten) and at most the stated bound above it, and, with complete (a closed list:
// a live one adds the open minutes of candidates only), every item whose truth is more than
// twice the bound above the list's last score listed.
func checkDecayedSketch(t *testing.T, what string, l List, truth map[string]float64, complete bool) {
	t.Helper()
	if l.HalfLife == 0 || l.Exact || l.Bound == nil {
		t.Fatalf("%s: half-life %v, exact %t, bound %v", what, l.HalfLife, l.Exact, l.Bound)
	}
	listed := map[string]bool{}
	for _, e := range l.Scored {
		listed[e.Item] = true
		tr := truth[e.Item]
		if e.Score < tr-decayedTol(tr) || e.Score > tr+l.Bound.MaxOvercount+decayedTol(tr) {
			t.Fatalf("%s: %s estimate %v, truth %v, bound %v", what, e.Item, e.Score, tr, l.Bound.MaxOvercount)
		}
	}
	if len(l.Scored) == 0 || !complete {
		return
	}
	last := l.Scored[len(l.Scored)-1].Score
	for it, tr := range truth {
		if !listed[it] && tr > last+2*l.Bound.MaxOvercount+1 {
			t.Fatalf("%s: %s (truth %v) missing, last listed %v, bound %v", what, it, tr, last, l.Bound.MaxOvercount)
		}
	}
}

// TestDecayedMatchesBruteForce: over seeded streams with late and too-late events, every
// decayed window's Top (closed minutes, as of AsOf) and Live (every minute, as of the newest
// event) equal the decayed sum recomputed from the raw events, and LiveAll equals Live.
func TestDecayedMatchesBruteForce(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    streamOpts
	}{
		{"late", streamOpts{seed: 2, n: 6000, items: 40, step: 15 * time.Second, counts: 3, late: true}},
		{"dense-ties", streamOpts{seed: 3, n: 5000, items: 12, step: 20 * time.Second, counts: 1, late: true}},
		{"sparse", streamOpts{seed: 4, n: 1500, items: 300, step: 90 * time.Second, counts: 5, late: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := decayedTestConfig()
			p, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			md := newModel(cfg)
			r := rand.New(rand.NewPCG(tc.o.seed, 5))
			for i, ev := range genStream(tc.o) {
				if got, want := p.Add(ev), md.add(ev); got != want {
					t.Fatalf("event %d: outcome %v, model %v", i, got, want)
				}
				p.TakeClosed()
				if r.IntN(30) == 0 {
					p.LiveAll()
				}
				if r.IntN(70) != 0 {
					continue
				}
				all := p.LiveAll()
				for j, wc := range cfg.Windows {
					if wc.Kind != windowset.Decayed {
						continue
					}
					what := fmt.Sprintf("event %d %s", i, wc.Name)
					top, _ := p.Top(wc.Name)
					live, _ := p.Live(wc.Name)
					if !top.AsOf.Equal(minuteTime(md.asOf)) || !live.AsOf.Equal(time.UnixMilli(md.maxSeen).UTC()) {
						t.Fatalf("%s: as of %v and %v", what, top.AsOf, live.AsOf)
					}
					if !reflect.DeepEqual(all[j], live) {
						t.Fatalf("%s: LiveAll\n%+v\nLive\n%+v", what, all[j], live)
					}
					closedTruth := md.decayedTruth(wc.HalfLife, md.asOf*minuteMs, md.asOf)
					liveTruth := md.decayedTruth(wc.HalfLife, md.maxSeen, math.MaxInt64)
					if wc.Mode == windowset.Exact {
						checkDecayedExact(t, what+" top", top, closedTruth, cfg.M*cfg.K)
						checkDecayedExact(t, what+" live", live, liveTruth, cfg.M*cfg.K)
						continue
					}
					checkDecayedSketch(t, what+" top", top, closedTruth, true)
					checkDecayedSketch(t, what+" live", live, liveTruth, false)
				}
			}
			checkInvariants(t, p)
		})
	}
}

// TestDecayedForgets: a single view is forgotten within ForgetHalfLives half-lives and an
// hour, freeing its item; a popular item is not.
func TestDecayedForgets(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Windows = []WindowConfig{{Name: "now", Kind: windowset.Decayed, HalfLife: 5 * time.Minute, Mode: windowset.Exact}}
	cfg.AllowedLateness = 0
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.Add(event.Event{ItemID: "once", Count: 1, TS: t0})
	for m := range 200 {
		p.Add(event.Event{ItemID: "hot", Count: 1000, TS: t0.Add(time.Duration(m) * time.Minute)})
		if m == 49 {
			if st := p.Stats(); st.Items != 2 {
				t.Fatalf("after 49 minutes %d items, want once still there", st.Items)
			}
		}
	}
	if st := p.Stats(); st.Items != 1 {
		t.Fatalf("after 200 minutes %d items, want hot only", st.Items)
	}
	l, _ := p.Top("now")
	if len(l.Scored) != 1 || l.Scored[0].Item != "hot" {
		t.Fatalf("list %v", l.Scored)
	}
	checkInvariants(t, p)
}

// TestDecayedScores pins the arithmetic on a hand-checked case: a view weighs 1 at the
// start of its minute and halves every half-life; the sliding hour forgets at once what the
// decayed list keeps at a quarter two half-lives later.
func TestDecayedScores(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Windows = []WindowConfig{
		{Name: "now", Kind: windowset.Decayed, HalfLife: 30 * time.Minute, Mode: windowset.Exact},
		{Name: "sk", Kind: windowset.Decayed, HalfLife: 30 * time.Minute, Mode: windowset.Sketch},
	}
	cfg.Sketch = sketch.Config{Width: 1 << 10, Depth: 4}
	cfg.AllowedLateness = 0
	p, _ := New(cfg)
	p.Add(event.Event{ItemID: "a", Count: 8, TS: t0.Add(10 * time.Second)})
	p.Add(event.Event{ItemID: "b", Count: 3, TS: t0.Add(30*time.Minute + 5*time.Second)})
	// AsOf t0+30m: b's minute is open; a's views are 30 minutes old.
	top, _ := p.Top("now")
	if want := []topk.Scored{{Item: "a", Score: 4}}; !scoresNear(top.Scored, want) || top.Total != 4 {
		t.Fatalf("top %v total %d, want %v", top.Scored, top.Total, want)
	}
	live, _ := p.Live("now")
	// At t0+30m5s: a 8 x 2^(-(30m5s)/30m), b 3 x 2^(-5s/30m).
	wa, wb := 8*math.Exp2(-1805.0/1800), 3*math.Exp2(-5.0/1800)
	if len(live.Scored) != 2 || math.Abs(live.Scored[0].Score-wa) > 1e-12 || math.Abs(live.Scored[1].Score-wb) > 1e-12 {
		t.Fatalf("live %v, want a %v b %v", live.Scored, wa, wb)
	}
	p.AdvanceTo(t0.Add(60 * time.Minute))
	for _, name := range []string{"now", "sk"} {
		top, _ = p.Top(name)
		if want := []topk.Scored{{Item: "a", Score: 2}, {Item: "b", Score: 1.5}}; !scoresNear(top.Scored, want) {
			t.Fatalf("%s an hour on: %v, want %v", name, top.Scored, want)
		}
	}
	if sk, _ := p.Top("sk"); sk.Bound == nil || sk.Total != 4 || math.Abs(sk.Bound.MaxOvercount-math.E/1024*3.5) > 1e-12 {
		t.Fatalf("sketch total %d bound %+v", sk.Total, sk.Bound)
	}
}

// TestDecayedEpochIsExact: values rescaled over many epochs equal values computed against
// the last epoch alone, bit for bit (a rescale is a power of two), so the epoch's steps
// never show in a score.
func TestDecayedEpochIsExact(t *testing.T) {
	for _, h := range []int64{5, 60, 1440} {
		d := decay{h: h}
		d.move(floorTo(t0.Unix()/60, epochHalfLives*h))
		m := t0.Unix() / 60
		v := d.weight(m)
		for step := range 5 {
			asOf := m + int64(step+1)*epochHalfLives*h
			k := d.move(asOf)
			v = scaleValue(v, k)
			if want := d.weight(m); math.Float64bits(v) != math.Float64bits(want) {
				t.Fatalf("h %d step %d: rescaled %v, direct %v", h, step, v, want)
			}
		}
	}
}

// TestDecayedConfig: the half-life's rules, the horizon Auto goes by, and the fingerprint.
func TestDecayedConfig(t *testing.T) {
	for _, tc := range []struct {
		wc   WindowConfig
		mode windowset.Mode
		err  string
	}{
		{WindowConfig{Name: "now", Kind: windowset.Decayed, HalfLife: time.Hour}, windowset.Exact, ""},
		{WindowConfig{Name: "now", Kind: windowset.Decayed, HalfLife: 144 * time.Minute}, windowset.Exact, ""},
		{WindowConfig{Name: "now", Kind: windowset.Decayed, HalfLife: 145 * time.Minute}, windowset.Sketch, ""},
		{WindowConfig{Name: "now", Kind: windowset.Decayed, HalfLife: 4 * time.Minute}, "", "half-life 4m0s"},
		{WindowConfig{Name: "now", Kind: windowset.Decayed, HalfLife: 90 * time.Second}, "", "half-life 1m30s"},
		{WindowConfig{Name: "now", Kind: windowset.Decayed, HalfLife: 31 * 24 * time.Hour}, "", "half-life 744h"},
		{WindowConfig{Name: "now", Kind: windowset.Decayed}, "", "half-life 0s"},
		{WindowConfig{Name: "now", Kind: windowset.Decayed, HalfLife: time.Hour, Span: trmodel.Day}, "", "no span"},
		{WindowConfig{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, HalfLife: time.Hour}, "", "has no half-life"},
	} {
		cfg := DefaultConfig()
		cfg.Windows = []WindowConfig{tc.wc}
		err := cfg.Validate()
		if tc.err != "" {
			if err == nil || !errors.Is(err, ErrConfig) || !bytes.Contains([]byte(err.Error()), []byte(tc.err)) {
				t.Errorf("%+v: %v, want an error naming %q", tc.wc, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%+v: %v", tc.wc, err)
		}
		if got := cfg.normalized().Windows[0].Mode; got != tc.mode {
			t.Errorf("%+v: auto mode %s, want %s", tc.wc, got, tc.mode)
		}
	}
	cfg := DefaultConfig()
	cfg.Windows = []WindowConfig{{Name: "now", Kind: windowset.Decayed, HalfLife: time.Hour, Mode: windowset.Exact}}
	if got := cfg.normalized().fingerprint(); got != "now:decayed:60m:exact" {
		t.Errorf("fingerprint %q", got)
	}
}

// scoresNear reports whether two scored lists name the same items in the same order with
// scores within 1e-12 (relative): a score is a product of two powers of two, rounded.
func scoresNear(a, b []topk.Scored) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Item != b[i].Item || math.Abs(a[i].Score-b[i].Score) > 1e-12*b[i].Score {
			return false
		}
	}
	return true
}

// FuzzRestoreDecayed is FuzzRestore under a config with decayed windows: Restore never
// panics, and what it accepts re-encodes to the same bytes and keeps working.
func FuzzRestoreDecayed(f *testing.F) {
	cfg := decayedTestConfig()
	cfg.Sketch.Width = 1 << 4
	for i, n := range []int{0, 30, 400} {
		p, _ := New(cfg)
		for _, ev := range genStream(streamOpts{seed: uint64(i + 1), n: n, items: 8, step: time.Minute, counts: 2, late: true}) {
			p.Add(ev)
		}
		f.Add(mustMarshal(f, p))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 8 && b[len(b)-1]&1 == 0 {
			b = reseal(bytes.Clone(b))
		}
		q, err := Restore(cfg, b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrConfigMismatch) {
				t.Fatalf("error wraps neither sentinel: %v", err)
			}
			return
		}
		checkInvariants(t, q)
		checkCanonical(t, cfg, b)
		for _, ev := range genStream(streamOpts{seed: 1, n: 50, items: 8, step: time.Hour, counts: 2, late: true}) {
			q.Add(ev)
		}
		allTops(t, q)
		q.LiveAll()
		checkInvariants(t, q)
	})
}

// FuzzRestoreIncrementalDecayed: RestoreIncremental of a checkpoint with decayed windows,
// its state and one piece (the values or the float sketch among them) mutated, returns a
// sentinel error or a consistent partition; never a panic.
func FuzzRestoreIncrementalDecayed(f *testing.F) {
	cfg := decayedTestConfig()
	cfg.Sketch.Width = 1 << 4
	var base []Piece
	ps := pieceStore{}
	p, _ := New(cfg)
	for i, ev := range genStream(streamOpts{seed: 5, n: 600, items: 12, step: 30 * time.Second, counts: 2, late: true}) {
		p.Add(ev)
		if i == 299 || i == 599 {
			state, pieces, _ := ps.save(f, p)
			base = pieces
			f.Add(state, uint(0), []byte(nil))
			for j := range pieces {
				f.Add(state, uint(j), pieces[j].Data)
			}
		}
	}
	f.Fuzz(func(t *testing.T, state []byte, at uint, piece []byte) {
		if len(state) > 8 && state[len(state)-1]&1 == 0 {
			state = reseal(bytes.Clone(state))
		}
		pieces := append([]Piece(nil), base...)
		if piece != nil && len(pieces) > 0 {
			pieces[at%uint(len(pieces))].Data = piece
		}
		q, err := RestoreIncremental(cfg, state, pieces)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrConfigMismatch) {
				t.Fatalf("error wraps neither sentinel: %v", err)
			}
			return
		}
		checkInvariants(t, q)
		for _, ev := range genStream(streamOpts{seed: 1, n: 50, items: 8, step: time.Hour, counts: 2, late: true}) {
			q.Add(ev)
		}
		allTops(t, q)
		q.LiveAll()
		checkInvariants(t, q)
	})
}

// TestDecayedCheckpointDelta: an exact decayed window's checkpoint stores every value once
// (the base) and then only the values changed and the items forgotten since it (a delta
// piece), which restores to the same state, bit for bit, also after forgetting and through
// a restore (whose next checkpoint still refers to the stored base); when the epoch moves
// or the delta would hold more than half the values, it stores a new base.
func TestDecayedCheckpointDelta(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Windows = []WindowConfig{{Name: "now", Kind: windowset.Decayed, HalfLife: 5 * time.Minute, Mode: windowset.Exact}}
	cfg.AllowedLateness = 0
	p, _ := New(cfg)
	ps := pieceStore{}
	kinds := func(pieces []Piece) (out []byte) {
		for _, pc := range pieces {
			out = append(out, pc.Data[len(pieceMagic)+1])
		}
		return out
	}
	restoreEqual := func(what string, state []byte, pieces []Piece, want *Partition) *Partition {
		t.Helper()
		q, err := RestoreIncremental(cfg, state, pieces)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if !bytes.Equal(mustMarshal(t, q), mustMarshal(t, want)) {
			t.Fatalf("%s: restores to another state", what)
		}
		checkInvariants(t, q)
		return q
	}
	m0 := floorTo(t0.Unix()/60, epochHalfLives*5) + 1 // the epoch does not move for 5 hours
	at := func(m int64) time.Time { return time.Unix((m0+m)*60, 0).UTC() }
	for i := range 1000 {
		p.Add(event.Event{ItemID: fmt.Sprintf("v%04d", i), Count: uint32(1 + i%7), TS: at(0)})
	}
	p.Add(event.Event{ItemID: "hot", Count: 9, TS: at(1)})
	state, pieces, full := ps.save(t, p)
	if k := kinds(pieces); !bytes.Equal(k, []byte{pieceDecayed}) {
		t.Fatalf("first checkpoint pieces of kinds %v, want one of every value", k)
	}
	restoreEqual("base", state, pieces, p)
	// Two more minutes of one item: a delta of it (and of the item of the open minute).
	p.Add(event.Event{ItemID: "hot", Count: 9, TS: at(2)})
	p.Add(event.Event{ItemID: "hot", Count: 9, TS: at(3)})
	state, pieces, written := ps.save(t, p)
	if k := kinds(pieces); !bytes.Equal(k, []byte{pieceDecayed, pieceDecayedDelta}) || written > full/20 {
		t.Fatalf("second checkpoint: pieces of kinds %v, %d bytes written (the base was %d)", k, written, full)
	}
	q := restoreEqual("delta", state, pieces, p)
	// The restored copy's next checkpoint is a delta against the base it was restored from
	// (its changes since: the restored delta's and the new minute's).
	p.Add(event.Event{ItemID: "v0001", Count: 2, TS: at(4)})
	q.Add(event.Event{ItemID: "v0001", Count: 2, TS: at(4)})
	qs := pieceStore{}
	for n, d := range ps {
		qs[n] = d
	}
	state, pieces, _ = qs.save(t, q)
	_, ppieces, _ := ps.save(t, p)
	if k := kinds(pieces); !bytes.Equal(k, []byte{pieceDecayed, pieceDecayedDelta}) || pieces[0].Name != ppieces[0].Name || pieces[1].Name != ppieces[1].Name {
		t.Fatalf("the restored copy's checkpoint: pieces of kinds %v, want the uninterrupted one's delta on the same base", k)
	}
	restoreEqual("the restored copy's delta", state, pieces, p)
	// Two hours on, the 1000 items are forgotten (at the first hourly sweep 50 minutes or
	// more after their views, at a 5-minute half-life) while hot stays.
	for m := int64(5); m < 130; m++ {
		p.Add(event.Event{ItemID: "hot", Count: 9, TS: at(m)})
		q.Add(event.Event{ItemID: "hot", Count: 9, TS: at(m)})
	}
	if st := p.Stats(); st.Items != 1 {
		t.Fatalf("%d items after an hour, want hot alone", st.Items)
	}
	// The restored copy refers to the base it was restored from, but a delta would forget
	// a thousand of 1,001 values: its next checkpoint stores a new base instead, which
	// restores to the same state as the uninterrupted partition.
	state, pieces, _ = qs.save(t, q)
	if k := kinds(pieces); !bytes.Equal(k, []byte{pieceDecayed}) {
		t.Fatalf("after forgetting most values: pieces of kinds %v, want a new base", k)
	}
	restoreEqual("after forgetting", state, pieces, p)
	// The epoch moves (5 hours on): a new base.
	state, pieces, _ = ps.save(t, p)
	p.Add(event.Event{ItemID: "hot", Count: 9, TS: at(epochHalfLives*5 + 1)})
	state, pieces, _ = ps.save(t, p)
	if k := kinds(pieces); !bytes.Equal(k, []byte{pieceDecayed}) {
		t.Fatalf("after the epoch moved: pieces of kinds %v, want a new base", k)
	}
	restoreEqual("new epoch", state, pieces, p)
}
