package worker

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A checkpoint's state is the partition's window snapshot alone, as before topics and groups
// existed, or a bundle of it with the topics snapshot and the group values' window snapshots
// (docs/format/checkpoint.md).

// bundleMagic starts a checkpoint state that holds more than the window snapshot. A window
// snapshot starts with "TWIN", so the two never confuse.
const bundleMagic = "TBND"

// Bundle layout versions: 1 holds the window and topics snapshots; 2 adds the groups part and
// says which parts are present. A bundle without groups is written as version 1, so a
// deployment without group lists writes what it always wrote.
const (
	bundleV1 = 1
	bundleV2 = 2
)

// Version 2's part flags.
const (
	bundleTopics = 1 << iota
	bundleGroups
)

// bundled is a checkpoint state's parts.
type bundled struct {
	win []byte
	top []byte // the topics snapshot; nil: none
	// groups are the group values' states; nil: none (groups off when it was taken)
	groups *groupsPart
}

// groupsPart is the group values' window states of one partition.
type groupsPart struct {
	// spec is the groups configuration the states were counted under (windowset.Groups.Kept):
	// a restore under another refuses the checkpoint (the group lists would miss the events
	// before it).
	spec string
	// closed: the partition refused a group value (Every's cap), so it admits no new value
	// (whose earlier events it dropped) and marks the group lists it sends nothing for partial.
	closed bool
	// winPieces is how many of the checkpoint's pieces are the window state's: they come
	// first, then each group's in order.
	winPieces int
	states    []groupPart
}

// groupPart is one group value's window state and how many pieces it references.
type groupPart struct {
	value  string
	pieces int
	state  []byte
}

// bundle encodes a checkpoint state: the bare window snapshot without topics and groups;
// version 1 ("TBND", 1, uvarint length + window, uvarint length + topics) with topics alone;
// version 2 with groups ("TBND", 2, flags, uvarint length + window, [uvarint length +
// topics], [the groups part]). Each snapshot carries its own checksum; the checkpoint's CRC
// covers all.
func bundle(b bundled) []byte {
	if b.top == nil && b.groups == nil {
		return b.win
	}
	out := []byte(bundleMagic)
	part := func(p []byte) {
		out = binary.AppendUvarint(out, uint64(len(p)))
		out = append(out, p...)
	}
	if b.groups == nil {
		out = append(out, bundleV1)
		part(b.win)
		part(b.top)
		return out
	}
	flags := byte(bundleGroups)
	if b.top != nil {
		flags |= bundleTopics
	}
	out = append(out, bundleV2, flags)
	part(b.win)
	if b.top != nil {
		part(b.top)
	}
	g := b.groups
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
	if len(b) < 1 || (b[0] != bundleV1 && b[0] != bundleV2) {
		return bundled{}, fmt.Errorf("%w: version %v, this build reads %d and %d", errBundle, b[:min(1, len(b))], bundleV1, bundleV2)
	}
	version := b[0]
	b = b[1:]
	var err error
	uv := func() uint64 {
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
	if version == bundleV1 {
		out.win, out.top = part(), part()
	} else {
		if len(b) < 1 || b[0]&^(bundleTopics|bundleGroups) != 0 || b[0]&bundleGroups == 0 {
			return bundled{}, fmt.Errorf("%w: version 2 flags %v", errBundle, b[:min(1, len(b))])
		}
		flags := b[0]
		b = b[1:]
		out.win = part()
		if flags&bundleTopics != 0 {
			out.top = part()
		}
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
			g.states = append(g.states, s)
		}
		out.groups = g
	}
	if err != nil {
		return bundled{}, err
	}
	if len(b) != 0 {
		return bundled{}, fmt.Errorf("%w: %d bytes after the parts", errBundle, len(b))
	}
	return out, nil
}
