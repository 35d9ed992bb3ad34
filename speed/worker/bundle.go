package worker

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A checkpoint's state is the partition's window snapshot alone, as before topics, salting
// and groups existed, or a bundle of it with the topics snapshot, the tracked (salted) items
// and the group values' window states (docs/format/checkpoint.md).

// bundleMagic starts a checkpoint state that holds more than the window snapshot. A window
// snapshot starts with "TWIN", so the two never confuse.
const bundleMagic = "TBND"

// Bundle layout versions: 1 holds the window and topics snapshots; 2 adds the tracked
// (salted) items; 3 adds the group states; 4 the per-account caps' table (last). Each is written only when it is needed (version 1
// without tracked items and groups, 2 with tracked items and without groups), so a
// checkpoint reads in a build that predates what it does not use.
const (
	bundleV1 = 1
	bundleV2 = 2
	bundleV3 = 3
	bundleV4 = 4
)

// Version 2 and 3 flags: which optional parts follow the window snapshot.
const (
	bundleTopics  = 1 << 0
	bundleTracked = 1 << 1
	bundleGroups  = 1 << 2 // version 3
	bundleCaps    = 1 << 3 // version 4: the per-account caps' table (speed/viewcap)
)

// bundled is a checkpoint state's parts.
type bundled struct {
	win     []byte
	top     []byte // the topics snapshot; nil: none
	tracked []byte // the tracked items (encodeTracked); nil: none
	// groups are the group values' states; nil: none (groups off when it was taken)
	groups *groupsPart
	// caps is the per-account caps' table (viewcap.Table.MarshalBinary); nil: caps off
	caps []byte
}

// groupsPart is the group values' window states of one partition.
type groupsPart struct {
	// spec is the groups configuration the states were counted under (windowset.Groups.Kept):
	// a restore under another refuses the checkpoint (the group lists would miss the events
	// before it).
	spec string
	// closed: the partition refused a value at the cap (every value seen), so it admits no
	// new value (whose earlier events it dropped) and marks its partials groups_full.
	closed bool
	// winPieces is how many of the checkpoint's pieces are the window state's: they come
	// first, then each group's in order.
	winPieces int
	states    []groupPart
}

// groupPart is one group value's window state, how many pieces it references and its tracked
// (salted) items.
type groupPart struct {
	value   string
	pieces  int
	state   []byte
	tracked []byte // encodeTracked; empty: none
}

// bundle encodes a checkpoint state: the bare window snapshot without the other parts;
// version 1 ("TBND", 1, uvarint length + window, uvarint length + topics) with topics alone;
// version 2 with tracked items and no groups ("TBND", 2, uvarint length + window, flags,
// then each part present as uvarint length + bytes); version 3 with groups (version 2's
// layout, flag bit 2 set, the groups part last). Each snapshot carries its own checksum; the
// checkpoint's CRC covers all.
func bundle(b bundled) []byte {
	if b.top == nil && b.tracked == nil && b.groups == nil && b.caps == nil {
		return b.win
	}
	out := []byte(bundleMagic)
	part := func(p []byte) {
		out = binary.AppendUvarint(out, uint64(len(p)))
		out = append(out, p...)
	}
	if b.tracked == nil && b.groups == nil && b.caps == nil {
		out = append(out, bundleV1)
		part(b.win)
		part(b.top)
		return out
	}
	version, flags := byte(bundleV2), byte(0)
	if b.groups != nil {
		version, flags = bundleV3, bundleGroups
	}
	if b.caps != nil {
		version, flags = bundleV4, flags|bundleCaps
	}
	if b.top != nil {
		flags |= bundleTopics
	}
	if b.tracked != nil {
		flags |= bundleTracked
	}
	out = append(out, version)
	part(b.win)
	out = append(out, flags)
	if b.top != nil {
		part(b.top)
	}
	if b.tracked != nil {
		part(b.tracked)
	}
	if g := b.groups; g != nil {
		part([]byte(g.spec))
		closed := byte(0)
		if g.closed {
			closed = 1
		}
		out = append(out, closed)
		out = binary.AppendUvarint(out, uint64(g.winPieces))
		out = binary.AppendUvarint(out, uint64(len(g.states)))
		for _, s := range g.states {
			part([]byte(s.value))
			out = binary.AppendUvarint(out, uint64(s.pieces))
			part(s.state)
			part(s.tracked)
		}
	}
	if b.caps != nil {
		part(b.caps)
	}
	return out
}

// errBundle is wrapped by unbundle's errors.
var errBundle = errors.New("bad checkpoint state bundle")

// unbundle splits a checkpoint state into its parts.
func unbundle(b []byte) (bundled, error) {
	if len(b) < len(bundleMagic) || string(b[:len(bundleMagic)]) != bundleMagic {
		return bundled{win: b}, nil
	}
	b = b[len(bundleMagic):]
	if len(b) < 1 || b[0] < bundleV1 || b[0] > bundleV4 {
		return bundled{}, fmt.Errorf("%w: version %v, this build reads %d to %d", errBundle, b[:min(1, len(b))], bundleV1, bundleV4)
	}
	version := b[0]
	b = b[1:]
	var err error
	uv := func() uint64 {
		if err != nil {
			return 0
		}
		n, k := binary.Uvarint(b)
		if k <= 0 {
			err = fmt.Errorf("%w: a count does not fit", errBundle)
			return 0
		}
		b = b[k:]
		return n
	}
	part := func() []byte {
		n := uv()
		if err != nil {
			return nil
		}
		if n > uint64(len(b)) {
			err = fmt.Errorf("%w: part length does not fit", errBundle)
			return nil
		}
		p := b[:n:n]
		b = b[n:]
		return p
	}
	var out bundled
	out.win = part()
	flags := byte(bundleTopics)
	if err == nil && version >= bundleV2 {
		// Version 2 needs the tracked part (else it is version 1), version 3 the groups.
		must, may := byte(bundleTracked), byte(bundleTopics|bundleTracked)
		switch version {
		case bundleV3:
			must, may = bundleGroups, bundleTopics|bundleTracked|bundleGroups
		case bundleV4:
			must, may = bundleCaps, bundleTopics|bundleTracked|bundleGroups|bundleCaps
		}
		if len(b) < 1 || b[0]&^may != 0 || b[0]&must == 0 {
			return bundled{}, fmt.Errorf("%w: version %d flags %v", errBundle, version, b[:min(1, len(b))])
		}
		flags, b = b[0], b[1:]
	}
	if flags&bundleTopics != 0 {
		out.top = part()
	}
	if flags&bundleTracked != 0 {
		out.tracked = part()
	}
	if flags&bundleGroups != 0 {
		g := &groupsPart{spec: string(part())}
		if err == nil {
			if len(b) < 1 || b[0] > 1 {
				err = fmt.Errorf("%w: groups closed flag", errBundle)
			} else {
				g.closed = b[0] == 1
				b = b[1:]
			}
		}
		g.winPieces = int(min(uv(), 1<<31))
		n := uv()
		if err == nil && n > uint64(len(b)) {
			err = fmt.Errorf("%w: %d groups do not fit", errBundle, n)
		}
		for i := uint64(0); err == nil && i < n; i++ {
			s := groupPart{value: string(part())}
			s.pieces = int(min(uv(), 1<<31))
			s.state = part()
			s.tracked = part()
			g.states = append(g.states, s)
		}
		out.groups = g
	}
	if flags&bundleCaps != 0 {
		out.caps = part()
	}
	if err != nil {
		return bundled{}, err
	}
	if len(b) != 0 {
		return bundled{}, fmt.Errorf("%w: %d bytes after the parts", errBundle, len(b))
	}
	return out, nil
}
