package sketch

import (
	"encoding/binary"
	"fmt"
)

// Presence is the set of a sketch's cells above a threshold, one bit a cell (1/64 of the
// sketch). A key's estimate is the smallest of its cells, so the estimate exceeds the
// threshold exactly when every one of its cells does: ContainsHash answers "did the sketch
// count this key beyond t" as the sketch itself would, after the sketch is gone. The
// trending-topics hold rule keeps one per closed hour (speed/topics) while the hour's sketch
// lives in the object store.
type Presence struct {
	width, depth int
	mask         uint32
	bits         []uint64 // cell i (row-major, as Sketch.counters) is bit i%64 of bits[i/64]
}

// Presence returns the cells of s holding more than t.
func (s *Sketch) Presence(t uint64) *Presence {
	p := &Presence{width: s.width, depth: s.depth, mask: s.mask, bits: make([]uint64, (len(s.counters)+63)/64)}
	for i, c := range s.counters {
		if c > t {
			p.bits[i/64] |= 1 << (i % 64)
		}
	}
	return p
}

// ContainsHash reports whether every cell of the key whose hash is h (as EstimateHash takes
// it) was above the threshold: whether the sketch's estimate of the key was.
func (p *Presence) ContainsHash(h uint64) bool {
	col, step, step2 := probe(h)
	for off := 0; off < p.width*p.depth; off += p.width {
		i := off + int(col&p.mask)
		if p.bits[i/64]&(1<<(i%64)) == 0 {
			return false
		}
		col += step
		step += step2
	}
	return true
}

// Depth returns the rows of the sketch p was taken of.
func (p *Presence) Depth() int { return p.depth }

// Bytes returns the memory of the bits.
func (p *Presence) Bytes() int { return len(p.bits) * 8 }

// AppendBinary appends p's encoding: uvarint width and depth, uvarint count of non-zero
// words, and per such word uvarint index delta and the word little-endian (sparse: few cells
// of an hour exceed its bound). Equal sets encode equally.
func (p *Presence) AppendBinary(b []byte) []byte {
	b = binary.AppendUvarint(b, uint64(p.width))
	b = binary.AppendUvarint(b, uint64(p.depth))
	n := 0
	for _, w := range p.bits {
		if w != 0 {
			n++
		}
	}
	b = binary.AppendUvarint(b, uint64(n))
	last := 0
	for i, w := range p.bits {
		if w != 0 {
			b = binary.AppendUvarint(b, uint64(i-last))
			b = binary.LittleEndian.AppendUint64(b, w)
			last = i
		}
	}
	return b
}

// DecodePresence decodes AppendBinary's encoding from the front of b and returns the rest,
// or an error wrapping ErrCorrupt. A shape of more than maxCells cells is refused before
// anything is allocated: the encoding is sparse, so a few bytes can claim any size.
func DecodePresence(b []byte, maxCells int) (*Presence, []byte, error) {
	next := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			b = nil
			return 1 << 62
		}
		b = b[n:]
		return v
	}
	width, depth := next(), next()
	cfg := Config{Width: int(min(width, 1<<40)), Depth: int(min(depth, 1<<20))}
	if err := cfg.Validate(); err != nil {
		return nil, nil, fmt.Errorf("%w: presence shape %dx%d: %v", ErrCorrupt, depth, width, err)
	}
	if cfg.Width*cfg.Depth > maxCells {
		return nil, nil, fmt.Errorf("%w: presence shape %dx%d over the %d cells allowed", ErrCorrupt, depth, width, maxCells)
	}
	p := &Presence{width: cfg.Width, depth: cfg.Depth, mask: uint32(cfg.Width - 1), bits: make([]uint64, (cfg.Width*cfg.Depth+63)/64)}
	n := next()
	if n > uint64(len(p.bits)) {
		return nil, nil, fmt.Errorf("%w: presence of %d words holds %d", ErrCorrupt, len(p.bits), n)
	}
	i := uint64(0)
	for k := range n {
		d := next()
		if b == nil || len(b) < 8 || (k > 0 && d == 0) || i+d >= uint64(len(p.bits)) {
			return nil, nil, fmt.Errorf("%w: presence word %d", ErrCorrupt, k)
		}
		i += d
		p.bits[i] = binary.LittleEndian.Uint64(b)
		b = b[8:]
	}
	return p, b, nil
}
