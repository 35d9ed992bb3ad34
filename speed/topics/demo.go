package topics

import (
	"fmt"
	"math/rand/v2"
	"time"

	"trending/model/topicrules"
)

// DemoBanned is the banned term of `trending topics demo`'s blocklist: FeedDemo mentions it
// as "#FreeMoney", which the blocklist drops.
const DemoBanned = "freemoney"

// DemoConfig is the State configuration of `trending topics demo`: a surge list per region
// and the worldwide list by volume, minute sketches width columns wide, the other settings
// the defaults.
func DemoConfig(regions []string, width int) Config {
	cfg := DefaultConfig()
	cfg.Regions = regions
	cfg.Width = width
	cfg.Scores = map[string]topicrules.Score{topicrules.World: topicrules.Volume}
	for _, r := range regions {
		cfg.Scores[r] = topicrules.Surge
	}
	return cfg
}

// FeedDemo feeds s the synthetic mentions of `trending topics demo`, in event time, so the
// week takes seconds: 7 days of history at now's clock hour (a Zipf mix of 2,000 topics
// over the regions, perHour mentions an hour, and a marathon at about 800 an hour in the
// first region), then the 15 minutes before now with the marathon surging in the first
// region, a never-seen "quake" rising fast in the last one, junk distinct junk tags from 5
// new accounts, and 200 mentions of the banned "#FreeMoney". The same seed feeds the same
// mentions. regions must not be empty; perHour must be positive and junk not negative.
func FeedDemo(s *State, regions []string, now time.Time, perHour, junk int, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x5eed))
	zipf := rand.NewZipf(rng, 1.1, 1, 1999)
	user := 0
	add := func(topic, region string, at time.Time, newAccount bool) {
		user++
		s.Add(Mention{Topic: topic, Region: region, UserID: fmt.Sprintf("u%d", user), NewAccount: newAccount, TS: at})
	}
	hour := now.Truncate(time.Hour)
	for d := 7; d >= 1; d-- {
		// The same clock hour d days ago: the background, and the marathon as a usual
		// topic at about 800 an hour in the first region (expected 200 per 15 minutes).
		start, n := hour.Add(-time.Duration(d)*24*time.Hour), perHour+800
		for i := range n {
			at := start.Add(time.Duration(i) * time.Hour / time.Duration(n))
			if rng.IntN(n) < 800 {
				add("marathon", regions[0], at, false)
				continue
			}
			add(fmt.Sprintf("topic%d", zipf.Uint64()), regions[rng.IntN(len(regions))], at, rng.IntN(10) == 0)
		}
	}
	start := now.Add(-15 * time.Minute)
	events := perHour / 4
	surge := 4000
	quake := 3000
	total := events + surge + quake + junk + 200
	for i := range total {
		at := start.Add(time.Duration(i) * 15 * time.Minute / time.Duration(total)).Add(time.Second)
		switch r := rng.IntN(total); {
		case r < surge:
			add("marathon", regions[0], at, false)
		case r < surge+quake:
			add("quake", regions[len(regions)-1], at, false)
		case r < surge+quake+junk:
			s.Add(Mention{Topic: fmt.Sprintf("junk%x", rng.Uint64()), Region: regions[rng.IntN(len(regions))],
				UserID: fmt.Sprintf("bot%d", rng.IntN(5)), NewAccount: true, TS: at})
		case r < surge+quake+junk+200:
			add("#FreeMoney", regions[0], at, true)
		default:
			add(fmt.Sprintf("topic%d", zipf.Uint64()), regions[rng.IntN(len(regions))], at, rng.IntN(10) == 0)
		}
	}
}
