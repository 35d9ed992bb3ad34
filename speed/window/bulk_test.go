package window

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	trmodel "trending/model"
	"trending/model/windowset"
	"trending/speed/sketch"
)

// TestBulkAddSameState: adding closed minutes to the sketch windows with
// sketch.AddHashes leaves the same state, byte for byte in the snapshot
// (every cell of every sketch), the same lists and outcomes as adding them
// key by key with AddHash, for standard and conservative sketches, with
// rows small enough for AddHashes' row-by-row order and large enough for
// its blocks.
func TestBulkAddSameState(t *testing.T) {
	defer func() { bulkAdd = true }()
	small := func(conservative bool) Config {
		cfg := snapAllConfig()
		cfg.Sketch.Conservative = conservative
		return cfg
	}
	wide := func(conservative bool) Config {
		cfg := windowsConfig([]WindowConfig{
			{Name: "sk-month", Kind: windowset.Sliding, Length: 30 * 24 * time.Hour, Bucket: 24 * time.Hour, Mode: windowset.Sketch},
			{Name: "sk-calendar-day", Kind: windowset.Calendar, Span: trmodel.Day, Mode: windowset.Sketch},
			{Name: "all", Kind: windowset.AllTime, Mode: windowset.Sketch},
		})
		cfg.Sketch = sketch.Config{Width: 1 << 18, Depth: 2, Seed: 9, Conservative: conservative}
		return cfg
	}
	for _, cc := range []struct {
		name string
		cfg  func(bool) Config
	}{{"rows", small}, {"blocks", wide}} {
		for _, cons := range []bool{false, true} {
			for seed := uint64(1); seed <= 4; seed++ {
				t.Run(fmt.Sprintf("%s/conservative=%t/%d", cc.name, cons, seed), func(t *testing.T) {
					r := rand.New(rand.NewPCG(seed, 8))
					evs := genStream(streamOpts{seed: seed, n: 3000 + r.IntN(3000), items: 50 + r.IntN(500),
						step: time.Duration(5+r.IntN(40)) * time.Second, counts: 1 + r.IntN(5), late: true})
					run := func(bulk bool) ([]byte, map[string]List, []Outcome, []List) {
						bulkAdd = bulk
						p, err := New(cc.cfg(cons))
						if err != nil {
							t.Fatal(err)
						}
						var out []Outcome
						var closed []List
						for _, ev := range evs {
							out = append(out, p.Add(ev))
							closed = append(closed, p.TakeClosed()...)
						}
						return mustMarshal(t, p), allTops(t, p), out, closed
					}
					snapOne, topsOne, outOne, closedOne := run(false)
					snapBulk, topsBulk, outBulk, closedBulk := run(true)
					if !bytes.Equal(snapOne, snapBulk) {
						t.Fatal("snapshots differ between AddHashes and AddHash one by one")
					}
					if !reflect.DeepEqual(topsOne, topsBulk) || !reflect.DeepEqual(outOne, outBulk) || !reflect.DeepEqual(closedOne, closedBulk) {
						t.Fatal("lists or outcomes differ between AddHashes and AddHash one by one")
					}
				})
			}
		}
	}
}
