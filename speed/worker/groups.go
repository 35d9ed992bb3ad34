package worker

import (
	"fmt"
	"slices"
	"time"

	"trending/model"
	"trending/model/windowset"
	"trending/speed/window"
)

// Lists per group value (Config.Groups, model/windowset.Groups): each partition keeps, beside
// its window state of all items, one window state per group value it has seen events of (the
// same windows, counting only that value's events), so live lists, sketches, snapshots and
// checkpoints work for a group as they do for all items, and memory grows with the (group,
// item) pairs that occur. Items are partitioned by id whatever their group, so the merger's
// per-group merge is exact as the global one is.
//
// A group state's watermark is its partition's: before it counts an event it moves to the
// partition's newest event time (window.Partition.AdvanceTo), and every publish moves them all
// there, so a group with few events closes its minutes and calendar windows with the rest of
// the partition, and an event is counted, late or too late for its group exactly as for all
// items. Exact windows end up the same whichever steps the watermark took to a minute; a
// sketch window's candidates may be re-estimated at another minute than in a replay, as the
// idle advance already allows.

// groupStates is one partition's window states per group value, owned by the partition's
// goroutine like its window state.
type groupStates struct {
	sel    windowset.Groups
	listed map[string]bool // sel.Values, looked up without allocating
	cfg    window.Config   // every group state's (the partition's windows, SinceDays 0)
	late   time.Duration
	states map[string]*window.Partition
	values []string // the keys of states, sorted: the order of publishing and checkpoints
	closed bool     // a value was refused for the cap: no new value is admitted any more
}

// Reasons an event of a group value is not counted in a group list (it is still counted in
// the lists of all items): the label of trending_speed_group_events_dropped_total.
const (
	// DropCap: every value seen gets lists (Groups.Every), but the partition already holds
	// its cap of values, or refused one before (it admits none after that: the refused
	// value's earlier events are missing).
	DropCap = "cap"
	// DropName: the value cannot name a list (a '/' in it, or over model.MaxGroupBytes).
	DropName = "name"
)

func newGroupStates(sel windowset.Groups, cfg window.Config) *groupStates {
	g := &groupStates{sel: sel, cfg: cfg, late: cfg.AllowedLateness, states: map[string]*window.Partition{}, listed: map[string]bool{}}
	for _, v := range sel.Values {
		g.listed[v] = true
	}
	return g
}

// newest is the partition's newest event time, which group states move their watermark to
// (AdvanceTo takes an event time: the watermark is it less the allowed lateness).
func (g *groupStates) newest(global *window.Partition) (time.Time, bool) {
	w := global.Watermark()
	if w.IsZero() {
		return w, false
	}
	return w.Add(g.late), true
}

// add counts an event of group value v in that value's state, creating it if the value gets
// lists, and tracks its item there when the event is salted (window.Partition.Track: the
// region's lists then report the item's count in full, for the merger to sum); it returns the
// drop reason of an event whose value gets no list ("" when counted or not configured). The
// partition's state must have counted the event already.
func (g *groupStates) add(global *window.Partition, v, item []byte, count uint32, ms int64, salted bool) string {
	st, ok := g.states[string(v)] // no allocation for the lookups
	if !ok {
		switch {
		case !g.sel.Every && !g.listed[string(v)]:
			return "" // not a configured value: counted in the lists of all items only
		case g.sel.Every && !model.ValidGroup(string(v)):
			return DropName
		case g.sel.Every && (g.closed || len(g.states) >= g.sel.Max):
			g.closed = true
			return DropCap
		}
		name := string(v) // a new state's: the one allocation
		var err error
		if st, err = window.New(g.cfg); err != nil {
			panic("BUG: a validated group window config refused: " + err.Error())
		}
		g.put(name, st)
	}
	if t, ok := g.newest(global); ok {
		st.AdvanceTo(t)
	}
	st.AddBytes(item, count, ms)
	if salted {
		st.Track(item, ms)
	}
	return ""
}

// put adds a value's state.
func (g *groupStates) put(v string, st *window.Partition) {
	g.states[v] = st
	i, _ := slices.BinarySearch(g.values, v)
	g.values = slices.Insert(g.values, i, v)
}

// sync moves every group state's watermark to the partition's: a quiet group's lists then
// stand as of the partition's, and its calendar windows close with the partition's.
func (g *groupStates) sync(global *window.Partition) {
	t, ok := g.newest(global)
	if !ok {
		return
	}
	for _, v := range g.values {
		g.states[v].AdvanceTo(t)
	}
}

// groupSnap is one group state's captured snapshot, with its tracked items (encodeTracked).
type groupSnap struct {
	value   string
	snap    *window.IncrementalSnapshot
	tracked []byte
}

// snapshot captures every group state (under the partition's lock); on an error the captured
// ones are abandoned.
func (g *groupStates) snapshot() ([]groupSnap, error) {
	out := make([]groupSnap, 0, len(g.values))
	for _, v := range g.values {
		s, err := g.states[v].SnapshotIncremental()
		if err != nil {
			g.abandon(out)
			return nil, fmt.Errorf("group %q: %w", v, err)
		}
		out = append(out, groupSnap{v, s, encodeTracked(g.states[v].TrackedItems())})
	}
	return out, nil
}

func (g *groupStates) abandon(snaps []groupSnap) {
	for _, s := range snaps {
		g.states[s.value].Abandon(s.snap)
	}
}

func (g *groupStates) stored(snaps []groupSnap) {
	for _, s := range snaps {
		g.states[s.value].Stored(s.snap)
	}
}

func (g *groupStates) forgetStored() {
	for _, v := range g.values {
		g.states[v].ForgetStored()
	}
}

// encode encodes captured snapshots (without the lock) into the bundle's groups part,
// appending their pieces after the window state's winPieces.
func (g *groupStates) encode(snaps []groupSnap, winPieces int, pieces []window.Piece) (*groupsPart, []window.Piece, error) {
	part := &groupsPart{spec: g.sel.Kept(), closed: g.closed, winPieces: winPieces, states: make([]groupPart, len(snaps))}
	for i, s := range snaps {
		state, ps, err := s.snap.Encode()
		if err != nil {
			return nil, nil, fmt.Errorf("group %q: %w", s.value, err)
		}
		part.states[i] = groupPart{value: s.value, pieces: len(ps), state: state, tracked: s.tracked}
		pieces = append(pieces, ps...)
	}
	return part, pieces, nil
}

// restoreGroups rebuilds a partition's group states from a checkpoint's groups part and its
// pieces (the window state's first). A checkpoint counted under other groups, or without
// groups, is refused: its group lists would miss every event before its offset.
func restoreGroups(sel windowset.Groups, cfg window.Config, part *groupsPart, pieces []window.Piece) (*groupStates, error) {
	if part == nil {
		return nil, fmt.Errorf("taken without lists per group (%s configured now): replaying from an earlier checkpoint or the start of the log, so the group lists count every event", sel)
	}
	if part.spec != sel.Kept() {
		return nil, fmt.Errorf("taken with lists per group %q, %q configured now: replaying from an earlier checkpoint or the start of the log, so the group lists count every event", part.spec, sel.Kept())
	}
	g := newGroupStates(sel, cfg)
	g.closed = part.closed
	next := part.winPieces
	for _, s := range part.states {
		if s.pieces < 0 || s.pieces > len(pieces)-next {
			return nil, fmt.Errorf("%w: group %q lists %d pieces, %d are left", errBundle, s.value, s.pieces, len(pieces)-next)
		}
		if !model.ValidGroup(s.value) || g.states[s.value] != nil {
			return nil, fmt.Errorf("%w: group value %q", errBundle, s.value)
		}
		st, err := window.RestoreIncremental(cfg, s.state, pieces[next:next+s.pieces])
		if err != nil {
			return nil, fmt.Errorf("group %q: %w", s.value, err)
		}
		if len(s.tracked) > 0 {
			tracked, err := decodeTracked(s.tracked)
			if err != nil {
				return nil, fmt.Errorf("group %q: %w", s.value, err)
			}
			st.SetTracked(tracked)
		}
		next += s.pieces
		g.put(s.value, st)
	}
	if next != len(pieces) {
		return nil, fmt.Errorf("%w: %d pieces belong to no state", errBundle, len(pieces)-next)
	}
	return g, nil
}
