package topics

import (
	"trending/model/topicrules"

	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"maps"
	"regexp"
	"slices"

	"trending/speed/sketch"
)

// Snapshot format, version 2 (docs/topics.md). Varints are encoding/binary's; strings and
// nested encodings are uvarint-length-prefixed; sketches use speed/sketch's own checksummed
// encoding.
//
//	magic "TTOP", version byte 2
//	string  config fingerprint (regions, shapes, window, candidates, dedupe size)
//	varint  newest minute
//	ring:   per slot: varint minute (-1 empty), bytes sketch
//	open:   uvarint count, per open hour ascending: varint Unix hour, bytes sketch
//	closed: uvarint count, per closed hour not yet saved to the object store, ascending:
//	        varint Unix hour, bytes sketch
//	seen:   uvarint count, per closed hour ascending: varint Unix hour, bytes presence
//	        (speed/sketch.Presence: the cells above the hour's bound)
//	lists:  per configured list in order: uvarint listed count, strings ascending;
//	        uvarint candidates, per candidate: string topic, per share minute:
//	        varint minute, uvarint new tenths, uvarint total tenths
//	dedupe: uvarint slots, uvarint each; uvarint counted, duplicates, evicted
//	stats:  uvarint counted, blocked, duplicates, late, unknown region
//	bytes   review queue JSON
//	4 bytes CRC-32C of everything before, little-endian
//
// The running window sketch is not stored: restore rebuilds it as the sum of the ring,
// which also proves the ring consistent. The public lists are not stored either; the next
// Refresh rebuilds them from the restored hysteresis and review state. Nor is the loaded
// baseline: it is in the object store, and NeedBaseline asks for it again after a restore.
//
// Version 1 had one hours section, every hour of the baseline depth (a week of sketches,
// 110 MB at the quarter width it used), and the baseline width in its fingerprint. Restore
// still reads it: the open hours stay open, the closed ones become unsaved (written to the
// object store at the next tick, at their own width) with their presence bitmaps.
var (
	snapMagic = []byte("TTOP")
	crcTable  = crc32.MakeTable(crc32.Castagnoli)
)

const (
	snapVersion   = 2
	snapVersionV1 = 1
)

// fingerprint is the settings a snapshot must have been taken under. The baseline width is
// not among them: every hour's sketch carries its own width, so hours of another width (a
// version 1 snapshot's quarter-width ones) are read and estimated at theirs.
func (s *State) fingerprint() string {
	c := s.cfg
	return fmt.Sprintf("regions=%q window=%v w=%d d=%d seed=%d days=%d k=%d dedupe=%d/%v",
		c.Regions, c.Window, c.Width, c.Depth, c.Seed, c.BaselineDays, c.Candidates,
		c.Dedupe.Capacity, c.Dedupe.TTL)
}

// v1Fingerprint is fp, a version 1 fingerprint, without its baseline width.
var bwField = regexp.MustCompile(` bw=[0-9]+`)

func v1Fingerprint(fp string) string { return bwField.ReplaceAllString(fp, "") }

// appendHours appends a count and the sketches of hours ascending.
func appendHours(b []byte, hours map[int64]*sketch.Sketch, appendSketch func([]byte, *sketch.Sketch) []byte) []byte {
	keys := slices.Sorted(maps.Keys(hours))
	b = binary.AppendUvarint(b, uint64(len(keys)))
	for _, h := range keys {
		b = binary.AppendVarint(b, h)
		b = appendSketch(b, hours[h])
	}
	return b
}

// Snapshot encodes the whole state, checksummed. Equal states encode to equal bytes.
func (s *State) Snapshot() ([]byte, error) {
	b := append([]byte(nil), snapMagic...)
	b = append(b, snapVersion)
	b = appendString(b, s.fingerprint())
	b = binary.AppendVarint(b, s.minute)
	var err error
	appendSketch := func(b []byte, sk *sketch.Sketch) []byte {
		enc, e := sk.MarshalBinary()
		err = errors.Join(err, e)
		return appendBytes(b, enc)
	}
	for i, sk := range s.ring {
		b = binary.AppendVarint(b, s.ringMin[i])
		b = appendSketch(b, sk)
	}
	b = appendHours(b, s.hours, appendSketch)
	b = appendHours(b, s.closed, appendSketch)
	seen := slices.Sorted(maps.Keys(s.seen))
	b = binary.AppendUvarint(b, uint64(len(seen)))
	for _, h := range seen {
		b = binary.AppendVarint(b, h)
		b = appendBytes(b, s.seen[h].AppendBinary(nil))
	}
	for _, l := range s.lists {
		listed := l.hyst.Topics()
		slices.Sort(listed)
		b = binary.AppendUvarint(b, uint64(len(listed)))
		for _, t := range listed {
			b = appendString(b, t)
		}
		// Candidates in topic order, so the bytes do not depend on heap history.
		cands := slices.Clone(l.cands.e)
		slices.SortFunc(cands, func(a, b *cand) int { return compareStrings(a.topic, b.topic) })
		b = binary.AppendUvarint(b, uint64(len(cands)))
		for _, c := range cands {
			b = appendString(b, c.topic)
			for i := range c.share.minute {
				b = binary.AppendVarint(b, c.share.minute[i])
				b = binary.AppendUvarint(b, c.share.newW[i])
				b = binary.AppendUvarint(b, c.share.total[i])
			}
		}
	}
	b = binary.AppendUvarint(b, uint64(len(s.dedupe.slots)))
	for _, e := range s.dedupe.slots {
		b = binary.AppendUvarint(b, e)
	}
	ds := s.dedupe.stats
	for _, v := range []uint64{ds.Counted, ds.Duplicates, ds.Evicted,
		s.stats.Counted, s.stats.Blocked, s.stats.Duplicates, s.stats.Late, s.stats.UnknownRegion} {
		b = binary.AppendUvarint(b, v)
	}
	rq, e := json.Marshal(s.review)
	if err = errors.Join(err, e); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	b = appendBytes(b, rq)
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, crcTable)), nil
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendBytes(b, p []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(p))), p...)
}

// reader decodes a snapshot; the first error sticks and every later read returns zero.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{topicrules.ErrCorrupt}, args...)...)
	}
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("bad uvarint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("bad varint")
		return 0
	}
	r.b = r.b[n:]
	return v
}

// count reads a length that must be at most max.
func (r *reader) count(max int, what string) int {
	v := r.uvarint()
	if v > uint64(max) {
		r.fail("%s: %d over the limit %d", what, v, max)
		return 0
	}
	return int(v)
}

func (r *reader) bytes() []byte {
	v := r.uvarint()
	if r.err == nil && v > uint64(len(r.b)) {
		r.fail("length %d past the end (%d bytes left)", v, len(r.b))
	}
	if r.err != nil {
		return nil
	}
	n := int(v)
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) sketch(want sketch.Config) *sketch.Sketch {
	p := r.bytes()
	if r.err != nil {
		return nil
	}
	sk := new(sketch.Sketch)
	if err := sk.UnmarshalBinary(p); err != nil {
		r.fail("sketch: %v", err)
		return nil
	}
	if c := sk.Config(); (c.Width != want.Width && want.Width != 0) || c.Depth != want.Depth || c.Seed != want.Seed || c.Conservative {
		r.fail("sketch shape %dx%d seed %d, want %dx%d seed %d", c.Depth, c.Width, c.Seed, want.Depth, want.Width, want.Seed)
		return nil
	}
	return sk
}

// Restore replaces the state with a snapshot's. The State must have been built with the
// configuration the snapshot was taken under (scores may differ); otherwise the error
// wraps topicrules.ErrConfigMismatch. Corrupt bytes give an error wrapping topicrules.ErrCorrupt. On error s is
// unchanged.
func (s *State) Restore(b []byte) error {
	if len(b) < len(snapMagic)+1+4 || string(b[:4]) != string(snapMagic) {
		return fmt.Errorf("%w: not a topics snapshot", topicrules.ErrCorrupt)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, crcTable) != sum {
		return fmt.Errorf("%w: checksum mismatch", topicrules.ErrCorrupt)
	}
	version := body[4]
	if version != snapVersion && version != snapVersionV1 {
		return fmt.Errorf("%w: version %d, this build reads %d and %d", topicrules.ErrCorrupt, version, snapVersionV1, snapVersion)
	}
	r := &reader{b: body[5:]}
	fp := string(r.bytes())
	if version == snapVersionV1 {
		fp = v1Fingerprint(fp)
	}
	if r.err == nil && fp != s.fingerprint() {
		return fmt.Errorf("%w: snapshot %s, config %s", topicrules.ErrConfigMismatch, fp, s.fingerprint())
	}
	n := len(s.ring)
	minute := r.varint()
	mcfg := sketch.Config{Width: s.cfg.Width, Depth: s.cfg.Depth, Seed: s.cfg.Seed}
	// Hours are read at their own width (0: any).
	bcfg := sketch.Config{Depth: s.cfg.Depth, Seed: s.cfg.Seed}
	ring, ringMin := make([]*sketch.Sketch, n), make([]int64, n)
	window := mustSketch(mcfg)
	for i := range ring {
		ringMin[i] = r.varint()
		ring[i] = r.sketch(mcfg)
		if r.err != nil {
			return r.err
		}
		m := ringMin[i]
		switch {
		case m == -1 && ring[i].Total() == 0:
		case m >= 0 && m <= minute && m > minute-int64(n) && mod(m, int64(n)) == int64(i):
		default:
			return fmt.Errorf("%w: ring slot %d holds minute %d at newest minute %d", topicrules.ErrCorrupt, i, m, minute)
		}
		if err := window.Merge(ring[i]); err != nil {
			return fmt.Errorf("%w: ring: %v", topicrules.ErrCorrupt, err)
		}
	}
	readHours := func(what string) (map[int64]*sketch.Sketch, error) {
		hours := map[int64]*sketch.Sketch{}
		last := int64(-1 << 62)
		for range r.count(s.cfg.BaselineDays*24+2, what) {
			h := r.varint()
			sk := r.sketch(bcfg)
			if r.err != nil {
				return nil, r.err
			}
			// An hour is at most as wide as the widest sketch this configuration makes (a
			// version 1 snapshot's quarter-width hours are narrower).
			if w := sk.Config().Width; w > max(s.cfg.Width, s.cfg.BaselineWidth) {
				return nil, fmt.Errorf("%w: %s hour %d is %d wide, over this configuration's %d", topicrules.ErrConfigMismatch, what, h, w, max(s.cfg.Width, s.cfg.BaselineWidth))
			}
			if h <= last || h > minute/60 {
				return nil, fmt.Errorf("%w: %s hour %d out of order or after the newest minute", topicrules.ErrCorrupt, what, h)
			}
			last, hours[h] = h, sk
		}
		return hours, nil
	}
	hours, err := readHours("hours")
	if err != nil {
		return err
	}
	closed, seen := map[int64]*sketch.Sketch{}, map[int64]*sketch.Presence{}
	if version == snapVersionV1 {
		// One section of every hour: split it as closeHours would have.
		open := minute - int64(n) + 1
		for h, sk := range hours {
			if (h+1)*60 <= open {
				delete(hours, h)
				closed[h], seen[h] = sk, sk.Presence(uint64(sk.ErrorBound().MaxOvercount))
			}
		}
	} else {
		if closed, err = readHours("closed hours"); err != nil {
			return err
		}
		last := int64(-1 << 62)
		for range r.count(s.cfg.BaselineDays*24+2, "seen hours") {
			h := r.varint()
			p := r.bytes()
			if r.err != nil {
				return r.err
			}
			// An hour is at most as wide as the widest sketch this configuration makes.
			pr, rest, err := sketch.DecodePresence(p, max(s.cfg.Width, s.cfg.BaselineWidth)*s.cfg.Depth)
			if err == nil && pr.Depth() != s.cfg.Depth {
				err = fmt.Errorf("depth %d, want %d", pr.Depth(), s.cfg.Depth)
			}
			if err != nil || len(rest) != 0 || h <= last || h > minute/60 {
				return fmt.Errorf("%w: seen hour %d: out of order, after the newest minute or %v", topicrules.ErrCorrupt, h, err)
			}
			last, seen[h] = h, pr
		}
	}
	type listState struct {
		listed []string
		cands  *candidates
	}
	lists := make([]listState, len(s.lists))
	for li, l := range s.lists {
		ls := &lists[li]
		for range r.count(s.cfg.Candidates, "listed") {
			ls.listed = append(ls.listed, string(r.bytes()))
		}
		ls.cands = newCandidates(s.cfg.Candidates, n)
		for range r.count(s.cfg.Candidates, "candidates") {
			topic := string(r.bytes())
			c := &cand{topic: topic, hash: sketch.KeyHashString(l.seed, topic), share: NewShare(n)}
			for i := range n {
				c.share.minute[i] = r.varint()
				c.share.newW[i] = r.uvarint()
				c.share.total[i] = r.uvarint()
				if c.share.newW[i] > c.share.total[i] {
					r.fail("candidate %q share: new %d over total %d", topic, c.share.newW[i], c.share.total[i])
				}
			}
			if r.err != nil {
				return r.err
			}
			if _, dup := ls.cands.index[topic]; dup {
				return fmt.Errorf("%w: candidate %q repeated", topicrules.ErrCorrupt, topic)
			}
			c.est = window.EstimateHash(c.hash)
			ls.cands.index[topic] = len(ls.cands.e)
			ls.cands.e = append(ls.cands.e, c)
		}
		ls.cands.reestimate(window.EstimateHash)
	}
	if got := r.count(len(s.dedupe.slots), "dedupe slots"); r.err == nil && got != len(s.dedupe.slots) {
		return fmt.Errorf("%w: %d dedupe slots, config says %d", topicrules.ErrConfigMismatch, got, len(s.dedupe.slots))
	}
	slots := make([]uint64, len(s.dedupe.slots))
	for i := range slots {
		slots[i] = r.uvarint()
	}
	var v [8]uint64
	for i := range v {
		v[i] = r.uvarint()
	}
	rq := r.bytes()
	if r.err != nil {
		return r.err
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", topicrules.ErrCorrupt, len(r.b))
	}
	review := topicrules.NewReview(s.cfg.ReviewMax)
	if err := review.UnmarshalJSON(rq); err != nil {
		return err
	}
	// Everything decoded: switch.
	s.minute, s.ring, s.ringMin, s.window, s.hours = minute, ring, ringMin, window, hours
	s.closed, s.seen, s.base, s.baseHour, s.baseWant = closed, seen, map[int64]*sketch.Sketch{}, -1, nil
	if minute >= 0 {
		s.moveBaseline()
	}
	for li, l := range s.lists {
		l.cands = lists[li].cands
		l.hyst = topicrules.NewHysteresis(s.cfg.Surge.Enter, s.cfg.Surge.Stay)
		l.hyst.Restore(lists[li].listed)
		l.public = nil
	}
	s.dedupe.slots = slots
	s.dedupe.stats = DedupeStats{Counted: v[0], Duplicates: v[1], Evicted: v[2]}
	s.stats = Stats{Counted: v[3], Blocked: v[4], Duplicates: v[5], Late: v[6], UnknownRegion: v[7]}
	s.review.ReplaceWith(review)
	return nil
}

func crc32c(b []byte) uint32 { return crc32.Checksum(b, crcTable) }
