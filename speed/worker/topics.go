package worker

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"trending/model"
	"trending/model/event"
	rules "trending/model/topics"
	"trending/speed/topics"
)

// Trending topics (docs/topics.md) in the worker: with Config.TrendingTopics set, each partition also owns
// a topics.State. Every decoded event is a mention of the topic item_id (with its region,
// user and account age); every publish tick refreshes the lists and publishes one partial
// per list, window model.TopicsKey(list, score).Name(); the checkpoint bundles the topics
// snapshot with the window snapshot.

// bundleMagic starts a checkpoint state that holds more than the window snapshot. A window
// snapshot starts with "TWIN", so the two never confuse.
const bundleMagic = "TBND"

// Bundle layout versions: 1 holds the window and topics snapshots; 2 adds the tracked
// (salted) items. Version 1 is written whenever there are no tracked items, so a checkpoint
// without salting reads in a build that predates it.
const (
	bundleV1 = 1
	bundleV2 = 2
)

// Version 2 flags: which optional parts follow the window snapshot.
const (
	bundleTopics  = 1 << 0
	bundleTracked = 1 << 1
)

// bundle encodes the window snapshot, the topics snapshot and the tracked items as one
// checkpoint state (docs/format/checkpoint.md). Without topics and tracked items the window
// snapshot is stored bare, as before topics existed; without tracked items, version 1:
// "TBND", 1, uvarint length + window snapshot, uvarint length + topics snapshot; else version
// 2: "TBND", 2, uvarint length + window snapshot, a flags byte (bit 0: a topics part
// follows, bit 1: a tracked part follows), then each part present as uvarint length + bytes.
// Each part carries its own checksum or structure; the checkpoint's CRC covers all.
func bundle(win, top, tracked []byte) []byte {
	if top == nil && tracked == nil {
		return win
	}
	b := make([]byte, 0, len(bundleMagic)+2+3*binary.MaxVarintLen64+len(win)+len(top)+len(tracked))
	b = append(b, bundleMagic...)
	if tracked == nil {
		b = append(b, bundleV1)
		b = binary.AppendUvarint(b, uint64(len(win)))
		b = append(b, win...)
		b = binary.AppendUvarint(b, uint64(len(top)))
		return append(b, top...)
	}
	b = append(b, bundleV2)
	b = binary.AppendUvarint(b, uint64(len(win)))
	b = append(b, win...)
	var flags byte = bundleTracked
	if top != nil {
		flags |= bundleTopics
	}
	b = append(b, flags)
	if top != nil {
		b = binary.AppendUvarint(b, uint64(len(top)))
		b = append(b, top...)
	}
	b = binary.AppendUvarint(b, uint64(len(tracked)))
	return append(b, tracked...)
}

// errBundle is wrapped by unbundle's errors.
var errBundle = errors.New("bad checkpoint state bundle")

// unbundle splits a checkpoint state into the window snapshot, the topics snapshot and the
// tracked items; top and tracked are nil when absent (a bare window snapshot has neither).
func unbundle(b []byte) (win, top, tracked []byte, err error) {
	if len(b) < len(bundleMagic) || string(b[:len(bundleMagic)]) != bundleMagic {
		return b, nil, nil, nil
	}
	b = b[len(bundleMagic):]
	if len(b) < 1 || (b[0] != bundleV1 && b[0] != bundleV2) {
		return nil, nil, nil, fmt.Errorf("%w: version %v, this build reads %d and %d", errBundle, b[:min(1, len(b))], bundleV1, bundleV2)
	}
	v := b[0]
	b = b[1:]
	part := func() ([]byte, error) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, fmt.Errorf("%w: part length does not fit", errBundle)
		}
		p := b[k : k+int(n)]
		b = b[k+int(n):]
		return p, nil
	}
	if win, err = part(); err != nil {
		return nil, nil, nil, err
	}
	flags := byte(bundleTopics)
	if v == bundleV2 {
		if len(b) < 1 || b[0]&^(bundleTopics|bundleTracked) != 0 || b[0]&bundleTracked == 0 {
			return nil, nil, nil, fmt.Errorf("%w: flags %v", errBundle, b[:min(1, len(b))])
		}
		flags, b = b[0], b[1:]
	}
	if flags&bundleTopics != 0 {
		if top, err = part(); err != nil {
			return nil, nil, nil, err
		}
	}
	if flags&bundleTracked != 0 {
		if tracked, err = part(); err != nil {
			return nil, nil, nil, err
		}
	}
	if len(b) != 0 {
		return nil, nil, nil, fmt.Errorf("%w: %d bytes after the parts", errBundle, len(b))
	}
	return win, top, tracked, nil
}

// mention turns a decoded event into a topics mention.
func mention(ev event.Event, w rules.WeightConfig) topics.Mention {
	return topics.Mention{Topic: ev.ItemID, Region: ev.Region, UserID: ev.UserID, TS: ev.TS, Count: ev.Count,
		NewAccount: ev.HasAccountAge && w.IsNew(time.Duration(ev.AccountAgeDays)*24*time.Hour)}
}

// topicsPartials refreshes the partition's topics lists at now and returns one partial per
// list, versioned like the window lists (asOf in Unix ms).
func topicsPartials(st *topics.State, id int, asOf, now time.Time) []model.Partial {
	cfg := st.Config()
	lists := st.Refresh(now)
	bound := &model.Bound{MaxOvercount: st.ErrorBound(), Probability: 1 - math.Exp(-float64(cfg.Depth))}
	out := make([]model.Partial, 0, len(lists))
	for _, name := range st.Lists() {
		score, err := rules.ParseScore(string(cfg.Scores[name]))
		if err != nil {
			panic("BUG: validated topics score rejected: " + err.Error())
		}
		ranked := lists[name]
		items := make([]model.Item, len(ranked))
		for i, r := range ranked {
			items[i] = model.Item{Rank: i + 1, ItemID: r.Topic, Views: uint64(math.Round(r.Mentions)), Topic: &model.Topic{Score: r.Score, Expected: r.Expected, NewShare: r.NewShare, NoHistory: r.NoHistory, Review: r.Review}}
		}
		out = append(out, model.Partial{Window: model.TopicsKey(name, string(score)).Name(), Partition: id, AsOf: asOf,
			Version: asOf.UnixMilli(), Bound: bound, Topics: items, Limit: cfg.ListSize})
	}
	return out
}
