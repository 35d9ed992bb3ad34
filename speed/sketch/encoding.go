package sketch

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
)

// Binary format, version 1 (docs/format/sketch.md is the full spec):
//
//	offset size field
//	0      4    magic "CMSK"
//	4      1    format version (1)
//	5      1    flags: bit 0 conservative update; other bits zero
//	6      1    log2(width), 0..27
//	7      1    depth, 1..16
//	8      8    seed, little-endian
//	16     8    total, little-endian
//	24     n    counters, row-major, as tokens (below)
//	24+n   4    CRC-32C (Castagnoli) of bytes [0, 24+n), little-endian
//
// A counter token is uvarint(v) for a cell v > 0 (its first byte is never
// 0x00), or 0x00 followed by uvarint(r-1) for a run of r >= 1 zero cells
// (runs may cross rows). The encoder always emits maximal runs and minimal
// varints, so equal sketches encode to equal bytes, and the decoder rejects
// anything else so that decode then encode reproduces the input.

const (
	formatVersion = 1
	headerSize    = 24
	crcSize       = 4
	flagConserv   = 1 << 0
	knownFlags    = flagConserv
)

var (
	magic     = [4]byte{'C', 'M', 'S', 'K'}
	castagnol = crc32.MakeTable(crc32.Castagnoli)
)

// MarshalBinary encodes s in the version-1 format. Equal sketches give equal
// bytes.
func (s *Sketch) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

// AppendBinary appends the encoding of s to dst, growing it at most once, so
// a checkpoint writer can reuse one buffer.
func (s *Sketch) AppendBinary(dst []byte) ([]byte, error) {
	size := headerSize + s.bodySize() + crcSize
	start := len(dst)
	if cap(dst)-start < size {
		grown := make([]byte, start, start+size)
		copy(grown, dst)
		dst = grown
	}
	var flags byte
	if s.cfg.Conservative {
		flags |= flagConserv
	}
	dst = append(dst, magic[:]...)
	dst = append(dst, formatVersion, flags, byte(bits.TrailingZeros(uint(s.width))), byte(s.depth))
	dst = binary.LittleEndian.AppendUint64(dst, s.cfg.Seed)
	dst = binary.LittleEndian.AppendUint64(dst, s.total)
	c := s.counters
	for i := 0; i < len(c); {
		if v := c[i]; v != 0 {
			dst = binary.AppendUvarint(dst, v)
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
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnol))
	if len(dst)-start != size {
		panic(fmt.Sprintf("BUG: sketch encoding is %d bytes, size pass said %d", len(dst)-start, size))
	}
	return dst, nil
}

// bodySize returns the length of the counter tokens.
func (s *Sketch) bodySize() int {
	c := s.counters
	n := 0
	for i := 0; i < len(c); {
		if v := c[i]; v != 0 {
			n += uvarintLen(v)
			i++
			continue
		}
		j := i + 1
		for j < len(c) && c[j] == 0 {
			j++
		}
		n += 1 + uvarintLen(uint64(j-i-1))
		i = j
	}
	return n
}

func uvarintLen(v uint64) int { return (bits.Len64(v|1) + 6) / 7 }

// UnmarshalBinary replaces s with the sketch encoded in b. Any malformed
// input returns an error wrapping ErrCorrupt and leaves s unchanged; it never
// panics, and it allocates the counters before the whole input has been
// checked only when they take at most maxCellsPerByte cells per input byte
// (then it decodes in one pass). When s already has the encoded shape its
// memory is reused.
func (s *Sketch) UnmarshalBinary(b []byte) error {
	if len(b) < headerSize+crcSize {
		return fmt.Errorf("%w: %d bytes is shorter than the %d-byte header and checksum", ErrCorrupt, len(b), headerSize+crcSize)
	}
	if [4]byte(b[:4]) != magic {
		return fmt.Errorf("%w: magic %q, want %q", ErrCorrupt, b[:4], magic[:])
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
	cfg := Config{
		Width:        1 << b[6],
		Depth:        int(b[7]),
		Seed:         binary.LittleEndian.Uint64(b[8:]),
		Conservative: flags&flagConserv != 0,
	}
	if cfg.Depth == 0 {
		return fmt.Errorf("%w: depth 0", ErrCorrupt)
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	total := binary.LittleEndian.Uint64(b[16:])
	body := payload[headerSize:]
	counters := s.counters
	if cells := cfg.Width * cfg.Depth; len(counters) != cells && cells <= len(body)*maxCellsPerByte {
		// New memory, no larger than a bounded multiple of the input: decode in one pass
		// (a failure leaves s unchanged and drops the memory).
		counters = make([]uint64, cells)
		if err := decodeCounters(body, cfg.Width, cfg.Depth, total, counters); err != nil {
			return err
		}
	} else {
		if err := decodeCounters(body, cfg.Width, cfg.Depth, total, nil); err != nil {
			return err
		}
		if len(counters) != cells {
			counters = make([]uint64, cells)
		}
		if err := decodeCounters(body, cfg.Width, cfg.Depth, total, counters); err != nil {
			panic("BUG: sketch body passed validation but failed to decode: " + err.Error())
		}
	}
	*s = Sketch{cfg: cfg, counters: counters, mask: uint32(cfg.Width - 1), width: cfg.Width, depth: cfg.Depth, total: total}
	return nil
}

// maxCellsPerByte bounds the counters UnmarshalBinary allocates before it has checked the
// whole input: at most this many cells (8 bytes each) per input byte, so a small hostile
// input cannot ask for much memory; a sparser sketch (long zero runs) is checked first.
const maxCellsPerByte = 8

// decodeCounters parses the counter tokens of a width x depth sketch. With
// out == nil it only checks them: canonical tokens, exactly width*depth
// cells, and every row summing to at most total (true of every sketch this
// package can build, so a violation means corruption). With out != nil (len
// width*depth) it writes every cell.
func decodeCounters(body []byte, width, depth int, total uint64, out []uint64) error {
	cells := width * depth
	cell, row, rowEnd := 0, 0, width
	var rowSum uint64
	prevRun := false
	for p := 0; p < len(body); {
		// Read a one-byte token inline, a longer one without building an error unless it
		// is bad.
		var v uint64
		var next int
		if c := body[p]; c < 0x80 {
			v, next = uint64(c), p+1
		} else if v, next = uvarintFast(body, p); next < 0 {
			_, _, err := uvarint(body, p)
			return fmt.Errorf("%w: counter token at body offset %d: %v", ErrCorrupt, p, err)
		}
		n := 1
		if v == 0 {
			if prevRun {
				return fmt.Errorf("%w: two zero runs in a row at body offset %d", ErrCorrupt, p)
			}
			r, after := uvarintFast(body, next)
			if after < 0 {
				_, _, err := uvarint(body, next)
				return fmt.Errorf("%w: zero run at body offset %d: %v", ErrCorrupt, p, err)
			}
			if r >= uint64(cells-cell) {
				return fmt.Errorf("%w: zero run of %d+1 cells at cell %d passes the %d cells", ErrCorrupt, r, cell, cells)
			}
			n, next = int(r)+1, after
			prevRun = true
		} else {
			if cell >= cells {
				return fmt.Errorf("%w: more than %d counters", ErrCorrupt, cells)
			}
			var carry uint64
			rowSum, carry = bits.Add64(rowSum, v, 0)
			if carry != 0 || rowSum > total {
				return fmt.Errorf("%w: row %d sums past the total %d", ErrCorrupt, row, total)
			}
			if out != nil {
				out[cell] = v
			}
			prevRun = false
		}
		if v == 0 && out != nil {
			clear(out[cell : cell+n])
		}
		cell += n
		for row < depth && cell >= rowEnd {
			row++
			rowEnd += width
			rowSum = 0
		}
		p = next
	}
	if cell != cells {
		return fmt.Errorf("%w: %d counters, want %d x %d = %d", ErrCorrupt, cell, depth, width, cells)
	}
	return nil
}

// uvarintFast is uvarint returning next -1 where uvarint returns an error.
func uvarintFast(b []byte, p int) (v uint64, next int) {
	for shift, i := uint(0), p; i < len(b) && shift < 64; shift, i = shift+7, i+1 {
		c := b[i]
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if (c == 0 && i > p) || (shift == 63 && c > 1) {
				return 0, -1
			}
			return v, i + 1
		}
	}
	return 0, -1
}

// uvarint reads a minimal LEB128 varint at b[p:], returning the value and the
// offset after it.
func uvarint(b []byte, p int) (uint64, int, error) {
	var v uint64
	for shift, i := uint(0), p; i < len(b); shift, i = shift+7, i+1 {
		c := b[i]
		if shift == 63 && c > 1 {
			return 0, 0, fmt.Errorf("varint overflows 64 bits")
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			if c == 0 && i > p {
				return 0, 0, fmt.Errorf("non-minimal varint")
			}
			return v, i + 1, nil
		}
	}
	return 0, 0, fmt.Errorf("truncated varint")
}
