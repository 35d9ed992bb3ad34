package worker

import (
	"math"
	"time"

	"trending/model"
	"trending/model/event"
	"trending/model/topicrules"
	"trending/speed/topics"
)

// Trending topics (docs/topics.md) in the worker: with Config.TrendingTopics set, each partition also owns
// a topics.State. Every decoded event is a mention of the topic item_id (with its region,
// user and account age); every publish tick refreshes the lists and publishes one partial
// per list, window model.TopicsKey(list, score).Name(); the checkpoint bundles the topics
// snapshot with the window snapshot (bundle.go).

// mention turns a decoded event into a topics mention.
func mention(ev event.Event, w topicrules.WeightConfig) topics.Mention {
	return topics.Mention{Topic: ev.ItemID, Region: ev.Region, UserID: ev.UserID, TS: ev.TS, Count: ev.Count,
		NewAccount: ev.HasAccountAge && w.IsNew(time.Duration(ev.AccountAgeDays)*24*time.Hour)}
}

// topicsPartials refreshes the partition's topics lists at now and returns one partial per
// list, versioned like the window lists (asOf in Unix ms).
func topicsPartials(st *topics.State, id int, asOf, now time.Time) []model.Partial {
	cfg := st.Config()
	lists := st.Refresh(now)
	bound := &model.Bound{MaxOvercount: st.ErrorBound(), Probability: 1 - math.Exp(-float64(cfg.Depth))}
	b := st.Baseline()
	base := &model.Baseline{Days: b.Days, Wanted: cfg.BaselineDays, Unavailable: b.Unavailable, MaxOvercount: b.MaxOvercount}
	out := make([]model.Partial, 0, len(lists))
	for _, name := range st.Lists() {
		score, err := topicrules.ParseScore(string(cfg.Scores[name]))
		if err != nil {
			panic("BUG: validated topics score rejected: " + err.Error())
		}
		ranked := lists[name]
		items := make([]model.Item, len(ranked))
		for i, r := range ranked {
			items[i] = model.Item{Rank: i + 1, ItemID: r.Topic, Views: uint64(math.Round(r.Mentions)), Topic: &model.Topic{Score: r.Score, Expected: r.Expected, NewShare: r.NewShare, NoHistory: r.NoHistory, Review: r.Review}}
		}
		out = append(out, model.Partial{Kind: model.PartialTopics, Window: model.TopicsKey(name, string(score)).Name(), Partition: id, AsOf: asOf,
			Version: asOf.UnixMilli(), Bound: bound, Baseline: base, Topics: items, Limit: cfg.ListSize})
	}
	return out
}
