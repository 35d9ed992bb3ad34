package sketch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"math/bits"
)

// Float is a count-min sketch of real-valued weights: the same grid, hash and columns as
// Sketch, with float64 cells. It counts exponentially decayed views (speed/window's decayed
// windows), where each view adds a weight 2^((t - E)/half-life) against a fixed epoch E, and
// rescales by an exact power of two (Scale) when the epoch moves. Cells are sums of weights
// that are never negative, so an estimate is never below the item's true sum (less the
// rounding of a float addition), and above it by at most (e/Width) x Total with probability
// 1 - e^-Depth, the bound of Sketch at N = Total.
//
// Float additions round, and their result depends on their order: a caller that needs the
// same cells after a restore and a replay (a checkpoint) adds a batch of keys in an order
// that does not depend on how it was reached (speed/window sorts a closed minute by hash).
// A Float is not safe for concurrent use.
type Float struct {
	cfg   Config
	cells []float64 // row i is cells[i*width : (i+1)*width]
	mask  uint32
	width int
	depth int
	total float64
}

// FlushBelow is the smallest cell Scale keeps: a cell scaled below it becomes 0, so scaling
// never reaches the subnormal floats, where a multiplication by a power of two rounds, and
// Scale(a) then Scale(b) equals Scale(a+b) bit for bit. A decayed count this small is
// 2^-900 of a view: nothing anyone can see.
const FlushBelow = 0x1p-900

// NewFloat returns an empty float sketch for cfg, or an error wrapping ErrConfig.
func NewFloat(cfg Config) (*Float, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Float{cfg: cfg, cells: make([]float64, cfg.Width*cfg.Depth), mask: uint32(cfg.Width - 1), width: cfg.Width, depth: cfg.Depth}, nil
}

// Config returns the sketch's configuration.
func (s *Float) Config() Config { return s.cfg }

// Total returns N, the sum of every weight added (scaled by Scale).
func (s *Float) Total() float64 { return s.total }

// AddHash adds weight v (finite, > 0) to the key whose Hash is h: to one cell per row, or
// with Config.Conservative only as far as the key's estimate plus v. A v that is not a
// positive finite number is ignored.
func (s *Float) AddHash(h uint64, v float64) {
	if !(v > 0) || math.IsInf(v, 1) {
		return
	}
	s.total += v
	col, step, step2 := probe(h)
	c, w, mask := s.cells, s.width, s.mask
	if !s.cfg.Conservative {
		for off := 0; off < len(c); off += w {
			c[off+int(col&mask)] += v
			col += step
			step += step2
		}
		return
	}
	var idx [MaxDepth]int
	lo := math.Inf(1)
	for i, off := 0, 0; i < s.depth; i, off = i+1, off+w {
		j := off + int(col&mask)
		idx[i] = j
		lo = min(lo, c[j])
		col += step
		step += step2
	}
	target := lo + v
	for _, j := range idx[:s.depth] {
		if c[j] < target {
			c[j] = target
		}
	}
}

// EstimateHash returns the key's estimate: the smallest of its cells.
func (s *Float) EstimateHash(h uint64) float64 {
	col, step, step2 := probe(h)
	c, w, mask := s.cells, s.width, s.mask
	est := math.Inf(1)
	for off := 0; off < len(c); off += w {
		est = min(est, c[off+int(col&mask)])
		col += step
		step += step2
	}
	return est
}

// Scale multiplies every cell and the total by 2^exp, exactly: a power of two changes only
// a float's exponent. A cell that would fall below FlushBelow becomes 0 (see FlushBelow),
// as does a total that would; exp must keep the cells finite (a decayed window scales down).
func (s *Float) Scale(exp int) {
	if exp == 0 {
		return
	}
	for i, v := range s.cells {
		if v == 0 {
			continue
		}
		if v = math.Ldexp(v, exp); v < FlushBelow {
			v = 0
		}
		s.cells[i] = v
	}
	if s.total = math.Ldexp(s.total, exp); s.total < FlushBelow {
		s.total = 0
	}
}

// Reset zeroes every cell and the total.
func (s *Float) Reset() {
	clear(s.cells)
	s.total = 0
}

// Clone returns a deep copy of s.
func (s *Float) Clone() *Float {
	c := *s
	c.cells = append([]float64(nil), s.cells...)
	return &c
}

// Equal reports whether s and o have the same configuration, total and cells, bit for bit.
func (s *Float) Equal(o *Float) bool {
	if s.cfg != o.cfg || math.Float64bits(s.total) != math.Float64bits(o.total) || len(s.cells) != len(o.cells) {
		return false
	}
	for i, v := range s.cells {
		if math.Float64bits(v) != math.Float64bits(o.cells[i]) {
			return false
		}
	}
	return true
}

// Binary format of a Float, version 1 (docs/format/sketch.md, "Float sketches"): the Sketch
// layout with magic "CMSF", the total as the IEEE-754 bits of a float64, and each nonzero
// cell's token the uvarint of its float64 bits (a positive finite float's bits are >= 1).
var floatMagic = [4]byte{'C', 'M', 'S', 'F'}

// AppendBinary appends the encoding of s to dst. Equal sketches give equal bytes.
func (s *Float) AppendBinary(dst []byte) ([]byte, error) {
	start := len(dst)
	var flags byte
	if s.cfg.Conservative {
		flags |= flagConserv
	}
	dst = append(dst, floatMagic[:]...)
	dst = append(dst, formatVersion, flags, byte(bits.TrailingZeros(uint(s.width))), byte(s.depth))
	dst = binary.LittleEndian.AppendUint64(dst, s.cfg.Seed)
	dst = binary.LittleEndian.AppendUint64(dst, math.Float64bits(s.total))
	c := s.cells
	for i := 0; i < len(c); {
		if v := c[i]; v != 0 {
			dst = binary.AppendUvarint(dst, math.Float64bits(v))
			i++
			continue
		}
		j := i + 1
		for j < len(c) && c[j] == 0 {
			j++
		}
		dst = append(dst, 0)
		dst = binary.AppendUvarint(dst, uint64(j-i-1))
		i = j
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnol)), nil
}

// rowSlack is how far a float sketch's row may sum past its total in a well-formed
// encoding: a row and the total add the same weights, in different orders, so they differ
// by rounding only.
const rowSlack = 1 + 1e-9

// UnmarshalBinary replaces s with the float sketch encoded in b. Malformed input (including
// a cell or total that is negative, infinite or NaN, or a row summing past the total) returns
// an error wrapping ErrCorrupt and leaves s unchanged; it never panics, and it allocates the
// cells only after the whole input has been checked.
func (s *Float) UnmarshalBinary(b []byte) error {
	if len(b) < headerSize+crcSize {
		return fmt.Errorf("%w: %d bytes is shorter than the %d-byte header and checksum", ErrCorrupt, len(b), headerSize+crcSize)
	}
	if [4]byte(b[:4]) != floatMagic {
		return fmt.Errorf("%w: magic %q, want %q", ErrCorrupt, b[:4], floatMagic[:])
	}
	if b[4] != formatVersion {
		return fmt.Errorf("%w: format version %d, this build reads %d", ErrCorrupt, b[4], formatVersion)
	}
	payload := b[:len(b)-crcSize]
	if got, want := crc32.Checksum(payload, castagnol), binary.LittleEndian.Uint32(b[len(b)-crcSize:]); got != want {
		return fmt.Errorf("%w: checksum %08x, stored %08x", ErrCorrupt, got, want)
	}
	flags := b[5]
	if flags&^knownFlags != 0 {
		return fmt.Errorf("%w: unknown flags %#02x", ErrCorrupt, flags)
	}
	if b[6] > 30 {
		return fmt.Errorf("%w: log2(width) %d", ErrCorrupt, b[6])
	}
	cfg := Config{Width: 1 << b[6], Depth: int(b[7]), Seed: binary.LittleEndian.Uint64(b[8:]), Conservative: flags&flagConserv != 0}
	if cfg.Depth == 0 {
		return fmt.Errorf("%w: depth 0", ErrCorrupt)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	total := math.Float64frombits(binary.LittleEndian.Uint64(b[16:]))
	if !validWeight(total) {
		return fmt.Errorf("%w: total %v", ErrCorrupt, total)
	}
	body := payload[headerSize:]
	if err := decodeFloatCells(body, cfg.Width, cfg.Depth, total, nil); err != nil {
		return err
	}
	cells := s.cells
	if len(cells) != cfg.Width*cfg.Depth {
		cells = make([]float64, cfg.Width*cfg.Depth)
	}
	if err := decodeFloatCells(body, cfg.Width, cfg.Depth, total, cells); err != nil {
		panic("BUG: float sketch body passed validation but failed to decode: " + err.Error())
	}
	*s = Float{cfg: cfg, cells: cells, mask: uint32(cfg.Width - 1), width: cfg.Width, depth: cfg.Depth, total: total}
	return nil
}

// validWeight reports whether v is a finite float >= 0 (and not -0).
func validWeight(v float64) bool { return math.Float64bits(v) < math.Float64bits(math.Inf(1)) }

// decodeFloatCells is decodeCounters for a Float: canonical tokens (maximal zero runs,
// minimal varints), exactly width*depth cells, each finite and positive, every row summing to
// at most the total (within rounding). With out != nil it writes every cell.
func decodeFloatCells(body []byte, width, depth int, total float64, out []float64) error {
	cells := width * depth
	cell, row := 0, 0
	var rowSum float64
	prevRun := false
	for p := 0; p < len(body); {
		v, next, err := uvarint(body, p)
		if err != nil {
			return fmt.Errorf("%w: cell token at body offset %d: %v", ErrCorrupt, p, err)
		}
		n := 1
		if v == 0 {
			if prevRun {
				return fmt.Errorf("%w: two zero runs in a row at body offset %d", ErrCorrupt, p)
			}
			r, after, err := uvarint(body, next)
			if err != nil {
				return fmt.Errorf("%w: zero run at body offset %d: %v", ErrCorrupt, p, err)
			}
			if r >= uint64(cells-cell) {
				return fmt.Errorf("%w: zero run of %d+1 cells at cell %d passes the %d cells", ErrCorrupt, r, cell, cells)
			}
			n, next = int(r)+1, after
			prevRun = true
		} else {
			if cell >= cells {
				return fmt.Errorf("%w: more than %d cells", ErrCorrupt, cells)
			}
			f := math.Float64frombits(v)
			if !validWeight(f) {
				return fmt.Errorf("%w: cell %d holds %v", ErrCorrupt, cell, f)
			}
			if rowSum += f; rowSum > total*rowSlack {
				return fmt.Errorf("%w: row %d sums past the total %v", ErrCorrupt, row, total)
			}
			if out != nil {
				out[cell] = f
			}
			prevRun = false
		}
		if v == 0 && out != nil {
			clear(out[cell : cell+n])
		}
		cell += n
		for row < depth && cell >= (row+1)*width {
			row++
			rowSum = 0
		}
		p = next
	}
	if cell != cells {
		return fmt.Errorf("%w: %d cells, want %d", ErrCorrupt, cell, cells)
	}
	return nil
}
