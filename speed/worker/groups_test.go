package worker_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"trending/internal/eventlog"
	"trending/internal/objstore"
	"trending/model"
	"trending/model/event"
	"trending/model/topk"
	"trending/model/windowset"
	"trending/speed/merge"
	"trending/speed/worker"
)

var threeRegions = windowset.Groups{By: windowset.ByRegion, Values: []string{"eu", "us", "apac"}}

// startGroupMerger runs a merger that serves the lists of groups too.
func (e *env) startGroupMerger(t *testing.T, groups windowset.Groups) {
	mcfg := merge.DefaultConfig()
	mcfg.K, mcfg.Store, mcfg.Staleness = k, e.st, time.Hour
	mcfg.Windows.Groups = groups
	m, err := merge.New(mcfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		rc := merge.DefaultRunConfig()
		rc.Kafka, rc.Topic, rc.PublishEvery, rc.Lookback = eventlog.Plain(e.brokers...), e.partials, 100*time.Millisecond, time.Hour
		done <- m.Run(ctx, rc)
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("merger: %v", err)
		}
	})
}

// truthOf is the exact top K of the events of region (any region: "*") whose time is in
// [from, to).
func (e *env) truthOf(region string, from, to time.Time) []topk.Entry {
	counts := map[string]uint64{}
	e.mu.Lock()
	for _, ev := range e.events {
		if (region == "*" || ev.Region == region) && !ev.TS.Before(from) && ev.TS.Before(to) {
			counts[ev.ItemID] += uint64(ev.Count)
		}
	}
	e.mu.Unlock()
	return topk.TopK(k, counts)
}

// regional gives each event a region: mostly the three configured ones, some none and some
// of a value without lists.
func regional(rng *rand.Rand, evs []event.Event) []event.Event {
	regions := []string{"eu", "eu", "us", "apac", "", "mars"}
	for i := range evs {
		evs[i].Region = regions[rng.IntN(len(regions))]
	}
	return evs
}

func withGroups(g windowset.Groups) func(*worker.Config) {
	return func(c *worker.Config) { c.Groups = g }
}

// groupsExact: lists per region (live hour and calendar hour) equal each region's truth, with
// late events, events of regions without lists and, with kills, crashes between batches that
// restore the group states from checkpoints; the list of all items stays the truth of every
// region. The closed calendar hour's region lists turn provisional with the rest.
func groupsExact(t *testing.T, brokers []string, obj *objstore.Client, kills int) {
	e := newEnv(t, brokers, obj, 4)
	e.startGroupMerger(t, threeRegions)
	rng := rand.New(rand.NewPCG(11, 12))
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	evs := regional(rng, stream(rng, t0, 30*time.Minute, 4000))
	late := []event.Event{{ItemID: "V1", Count: 50, TS: t0.Add(2 * time.Minute), Region: "eu"}, {ItemID: "LATE", Count: 7, TS: t0.Add(3 * time.Minute), Region: "apac"}}
	batches := 4 * max(kills, 1)
	per := len(evs) / batches
	var regs []*prometheus.Registry
	start := func() func(bool) {
		reg := prometheus.NewRegistry()
		regs = append(regs, reg)
		return e.startWorker(t, withGroups(threeRegions), func(c *worker.Config) { c.Registry = reg })
	}
	stop := start()
	for b := 0; b < batches; b++ {
		e.produce(t, evs[b*per:(b+1)*per])
		if b == batches/2 {
			e.produce(t, late)
		}
		if kills > 0 && b%4 == 3 {
			// Kill after some checkpoint of this worker (whatever it holds): the next one then
			// restores group states, not the whole log.
			time.Sleep(time.Duration(rng.IntN(300)) * time.Millisecond)
			reg := regs[len(regs)-1]
			for deadline := time.Now().Add(20 * time.Second); counterValue(t, reg, "trending_speed_checkpoints_total") < 1 && time.Now().Before(deadline); {
				time.Sleep(20 * time.Millisecond)
			}
			stop(true)
			stop = start()
		}
	}
	e.produce(t, evs[batches*per:])
	e.produce(t, sentinels(t0.Add(40*time.Minute)))
	defer func() { stop(false) }()
	from, to := t0.Add(-20*time.Minute), t0.Add(39*time.Minute)
	e.waitFor(t, model.Key{Window: "hour"}, e.truthOf("*", from, to), 90*time.Second)
	for _, r := range threeRegions.Values {
		e.waitFor(t, model.Key{Window: "hour", Group: r}, e.truthOf(r, from, to), 30*time.Second)
		e.waitFor(t, model.Key{Window: "hour", Group: r, Start: t0}, e.truthOf(r, t0, to), 30*time.Second)
	}
	var restores float64
	for _, reg := range regs {
		restores += counterValue(t, reg, "trending_speed_restores_total")
	}
	if kills > 0 && restores < float64(kills) {
		t.Errorf("%v partitions restored from checkpoints over %d kills: the group states' restore is hardly tested", restores, kills)
	}
	t.Logf("%v partitions restored from checkpoints", restores)
	for _, g := range []string{"mars", ""} {
		if _, err := e.st.Get(context.Background(), model.Key{Window: "hour", Group: g}); g != "" && err == nil {
			t.Errorf("a list of %q, which has no lists, was stored", g)
		}
	}
	// Close the hour: each region's calendar hour turns provisional, still its truth.
	e.produce(t, sentinels(t0.Add(62*time.Minute)))
	for _, r := range threeRegions.Values {
		key := model.Key{Window: "hour", Group: r, Start: t0}
		want := e.truthOf(r, t0, t0.Add(time.Hour))
		deadline := time.Now().Add(30 * time.Second)
		for {
			l, err := e.st.Get(context.Background(), key)
			if err == nil && l.Status == model.StatusProvisional && fmt.Sprint(entries(l)) == fmt.Sprint(want) && !l.Incomplete {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: status %q items %v partial %v (%v); want provisional %v", key, l.Status, entries(l), l.StalePartitions, err, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
}

func entries(l model.List) []topk.Entry {
	out := make([]topk.Entry, len(l.Items))
	for i, it := range l.Items {
		out[i] = topk.Entry{Item: it.ItemID, Count: it.Views}
	}
	return out
}

func TestGroupsEmbedded(t *testing.T)        { b, o := embedded(t); groupsExact(t, b, o, 0) }
func TestGroupsCrashesEmbedded(t *testing.T) { b, o := embedded(t); groupsExact(t, b, o, 3) }
func TestGroupsCrashesKafka(t *testing.T)    { b, o := real(t); groupsExact(t, b, o, 3) }

// TestGroupsEveryCap: with every value seen getting lists up to a cap of 2, a one-partition
// topic keeps lists of the first two regions it sees, counts the third's events as dropped
// (cap) and one with a '/' as dropped (name), and says GroupsFull, while the list of all items
// counts every event.
func TestGroupsEveryCap(t *testing.T) {
	brokers, obj := embedded(t)
	e := newEnv(t, brokers, obj, 1)
	every := windowset.Groups{By: windowset.ByRegion, Every: true, Max: 2}
	e.startGroupMerger(t, every)
	reg := prometheus.NewRegistry()
	stop := e.startWorker(t, withGroups(every), func(c *worker.Config) { c.Registry = reg })
	defer stop(false)
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	var evs []event.Event
	for i, r := range []string{"a", "b", "a", "c", "b", "c", "a/b", "c"} {
		evs = append(evs, event.Event{ItemID: fmt.Sprintf("V%d", i%3), Count: uint32(i + 1), TS: t0.Add(time.Duration(i) * time.Minute), Region: r})
	}
	e.produce(t, evs)
	e.produce(t, sentinels(t0.Add(20*time.Minute)))
	// Every event, sentinels included, is in the live hour (its open minutes included).
	from, to := t0, t0.Add(21*time.Minute)
	e.waitFor(t, model.Key{Window: "hour"}, e.truthOf("*", from, to), 60*time.Second)
	e.waitFor(t, model.Key{Window: "hour", Group: "a"}, e.truthOf("a", from, to), 10*time.Second)
	e.waitFor(t, model.Key{Window: "hour", Group: "b"}, e.truthOf("b", from, to), 10*time.Second)
	if l, err := e.st.Get(context.Background(), model.Key{Window: "hour", Group: "c"}); err == nil {
		t.Fatalf("c has a list past the cap: %+v", l)
	}
	drops := map[string]float64{}
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() == "trending_speed_group_events_dropped_total" {
			for _, m := range mf.GetMetric() {
				drops[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	if drops[worker.DropCap] != 3 || drops[worker.DropName] != 1 {
		t.Fatalf("dropped %v, want cap 3 (every c event), name 1 (a/b)", drops)
	}
	if n := counterValue(t, reg, "trending_speed_group_lists"); n != 2 {
		t.Fatalf("trending_speed_group_lists %v, want 2", n)
	}
}

// TestGroupsCheckpointUnderOtherGroups: a checkpoint counted with lists of eu and us is refused
// by a worker configured with apac too (its apac lists would miss every event before the
// checkpoint): the partition replays the log from the start and the apac lists are the truth;
// a worker with groups off restores the same checkpoint.
func TestGroupsCheckpointUnderOtherGroups(t *testing.T) {
	brokers, obj := embedded(t)
	e := newEnv(t, brokers, obj, 2)
	e.startGroupMerger(t, threeRegions)
	rng := rand.New(rand.NewPCG(13, 14))
	t0 := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	evs := regional(rng, stream(rng, t0, 30*time.Minute, 1500))
	two := windowset.Groups{By: windowset.ByRegion, Values: []string{"eu", "us"}}
	reg := prometheus.NewRegistry()
	stop := e.startWorker(t, withGroups(two), func(c *worker.Config) { c.Registry = reg })
	e.produce(t, evs)
	e.produce(t, sentinels(t0.Add(40*time.Minute)))
	from, to := t0.Add(-20*time.Minute), t0.Add(39*time.Minute)
	e.waitFor(t, model.Key{Window: "hour", Group: "eu"}, e.truthOf("eu", from, to), 60*time.Second)
	stop(false) // a final checkpoint of both partitions
	if n := counterValue(t, reg, "trending_speed_checkpoints_total"); n < 2 {
		t.Fatalf("%v checkpoints", n)
	}
	off := prometheus.NewRegistry()
	stop = e.startWorker(t, func(c *worker.Config) { c.Registry = off })
	for deadline := time.Now().Add(30 * time.Second); counterValue(t, off, "trending_speed_restores_total") < 2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("groups off: %v restores, want both partitions from their checkpoints", counterValue(t, off, "trending_speed_restores_total"))
		}
	}
	stop(false)
	three := prometheus.NewRegistry()
	stop = e.startWorker(t, withGroups(threeRegions), func(c *worker.Config) { c.Registry = three })
	defer func() { stop(false) }()
	e.waitFor(t, model.Key{Window: "hour", Group: "apac"}, e.truthOf("apac", from, to), 60*time.Second)
	e.waitFor(t, model.Key{Window: "hour", Group: "us"}, e.truthOf("us", from, to), 10*time.Second)
	if n := counterValue(t, three, "trending_speed_restores_total"); n != 0 {
		t.Errorf("eu,us,apac: %v restores, want none (the checkpoints counted other groups)", n)
	}
}
