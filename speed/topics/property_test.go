package topics

import (
	"trending/model/topicrules"

	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// TestWindowMatchesBruteForce drives random mentions (forward-moving time with jumps, late
// ones, several regions and weights) through a State and checks every candidate's window
// count against an exact recount of the accepted mentions: never low, and exact when the
// sketch is wide enough for no collisions to matter. Halfway, the state goes through a
// snapshot and restore and must go on identically.
func TestWindowMatchesBruteForce(t *testing.T) {
	for seed := range uint64(5) {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			cfg := DefaultConfig()
			cfg.Regions, cfg.Width, cfg.BaselineWidth = []string{"a", "b", "c"}, 1<<14, 1<<8
			cfg.Dedupe.Capacity, cfg.Candidates, cfg.ListSize = 1<<10, 60, 10
			s := newState(t, cfg, nil)
			type rec struct {
				minute int64
				list   string
				topic  string
				tenths uint64
			}
			var kept []rec
			at := t0
			for i := range 6000 {
				switch r := rng.IntN(100); {
				case r < 2:
					at = at.Add(time.Duration(rng.IntN(40)) * time.Minute)
				case r < 40:
					at = at.Add(time.Duration(rng.IntN(20)) * time.Second)
				}
				ts := at
				if rng.IntN(10) == 0 {
					ts = at.Add(-time.Duration(rng.IntN(20)) * time.Minute) // maybe late
				}
				m := Mention{Topic: fmt.Sprintf("t%d", rng.IntN(40)), Region: []string{"a", "b", "c", "", "zz"}[rng.IntN(5)],
					NewAccount: rng.IntN(3) == 0, TS: ts}
				if s.Add(m) {
					w, mi := topicrules.Tenths(m.NewAccount), ts.Unix()/60
					kept = append(kept, rec{mi, topicrules.World, m.Topic, w})
					if m.Region != "" && m.Region != "zz" {
						kept = append(kept, rec{mi, m.Region, m.Topic, w})
					}
				}
				if i == 3000 {
					snap, err := s.Snapshot()
					if err != nil {
						t.Fatal(err)
					}
					r := newState(t, cfg, nil)
					if err := r.Restore(snap); err != nil {
						t.Fatal(err)
					}
					again, _ := r.Snapshot()
					if !bytes.Equal(snap, again) {
						t.Fatal("restore not identical")
					}
					s = r
				}
			}
			now := s.Minute()
			exact := map[string]uint64{}
			for _, k := range kept {
				if k.minute > now-15 {
					exact[k.list+"/"+k.topic] += k.tenths
				}
			}
			for _, l := range s.Lists() {
				for _, r := range mustRank(t, s, l) {
					truth := float64(exact[l+"/"+r.Topic]) / 10
					if r.Mentions < truth || r.Mentions > truth+s.ErrorBound() {
						t.Errorf("%s/%s: estimate %v, truth %v, bound %v", l, r.Topic, r.Mentions, truth, s.ErrorBound())
					}
				}
			}
		})
	}
}
