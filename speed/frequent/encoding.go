package frequent

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
	"slices"
	"strings"
)

// Binary format, version 1 (docs/format/frequent.md is the full spec):
//
//	offset size field
//	0      4    magic "FQMG"
//	4      1    format version (1)
//	5      1    flags, zero
//	6      2    reserved, zero
//	8      4    capacity m, little-endian, 1..MaxCapacity
//	12     8    total N, little-endian
//	20     8    offset D, little-endian
//	28     n    uvarint(count), then count entries in strictly ascending
//	            byte order of item: uvarint(len(item)) item uvarint(counter)
//	28+n   4    CRC-32C (Castagnoli) of bytes [0, 28+n), little-endian
//
// Varints are minimal, counters >= 1, items 1..MaxItemBytes bytes, count <=
// 2m, and sum(counters) + D*(m+1) <= N (the invariant behind the bound).
// Equal summaries encode to equal bytes and the decoder accepts only that
// form.

const (
	formatVersion = 1
	headerSize    = 28
	crcSize       = 4
	// MaxItemBytes bounds an item in the encoding; event ids are at most 256.
	MaxItemBytes = 1024
)

var (
	magic     = [4]byte{'F', 'Q', 'M', 'G'}
	castagnol = crc32.MakeTable(crc32.Castagnoli)
)

// MarshalBinary encodes s in the version-1 format.
func (s *Summary) MarshalBinary() ([]byte, error) { return s.AppendBinary(nil) }

// AppendBinary appends the encoding of s to dst. It fails only for an item
// longer than MaxItemBytes (ErrCorrupt: the decoder would refuse it).
func (s *Summary) AppendBinary(dst []byte) ([]byte, error) {
	order := make([]int32, len(s.items))
	for i, k := range s.items {
		order[i] = int32(i)
		if len(k) == 0 || len(k) > MaxItemBytes {
			return dst, fmt.Errorf("%w: item of %d bytes (1..%d)", ErrCorrupt, len(k), MaxItemBytes)
		}
	}
	slices.SortFunc(order, func(a, b int32) int { return strings.Compare(s.items[a], s.items[b]) })
	start := len(dst)
	dst = append(dst, magic[:]...)
	dst = append(dst, formatVersion, 0, 0, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(s.m))
	dst = binary.LittleEndian.AppendUint64(dst, s.total)
	dst = binary.LittleEndian.AppendUint64(dst, s.offset)
	dst = binary.AppendUvarint(dst, uint64(len(order)))
	for _, i := range order {
		k := s.items[i]
		dst = binary.AppendUvarint(dst, uint64(len(k)))
		dst = append(dst, k...)
		dst = binary.AppendUvarint(dst, s.vals[i])
	}
	return binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnol)), nil
}

func corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
}

// uvarint reads a minimal uvarint from b.
func uvarint(b []byte) (uint64, int, error) {
	v, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, 0, corrupt("truncated or overlong varint")
	}
	if n != uvarintLen(v) {
		return 0, 0, corrupt("non-minimal varint")
	}
	return v, n, nil
}

func uvarintLen(v uint64) int { return max(1, (bits.Len64(v)+6)/7) }

// UnmarshalBinary decodes a version-1 summary into s, replacing its
// contents. Every failure wraps ErrCorrupt and leaves s unchanged.
func (s *Summary) UnmarshalBinary(data []byte) error {
	if len(data) < headerSize+1+crcSize {
		return corrupt("%d bytes, under the %d of an empty summary", len(data), headerSize+1+crcSize)
	}
	if !bytes.Equal(data[:4], magic[:]) {
		return corrupt("bad magic %q", data[:4])
	}
	if data[4] != formatVersion {
		return corrupt("format version %d, this build reads %d", data[4], formatVersion)
	}
	body := data[:len(data)-crcSize]
	if got, want := binary.LittleEndian.Uint32(data[len(body):]), crc32.Checksum(body, castagnol); got != want {
		return corrupt("checksum %08x, computed %08x", got, want)
	}
	if data[5] != 0 || data[6] != 0 || data[7] != 0 {
		return corrupt("unknown flags or reserved bytes")
	}
	m := binary.LittleEndian.Uint32(data[8:])
	if m < 1 || m > MaxCapacity {
		return corrupt("capacity %d out of 1..%d", m, MaxCapacity)
	}
	total := binary.LittleEndian.Uint64(data[12:])
	offset := binary.LittleEndian.Uint64(data[20:])
	hi, lo := bits.Mul64(offset, uint64(m)+1)
	if hi != 0 || lo > total {
		return corrupt("offset %d x (capacity %d + 1) over the total %d", offset, m, total)
	}
	budget := total - lo // what the counters may sum to
	b := body[headerSize:]
	count, n, err := uvarint(b)
	if err != nil {
		return err
	}
	b = b[n:]
	if count > 2*uint64(m) || count > uint64(len(b))/3 {
		return corrupt("%d entries for capacity %d in %d bytes", count, m, len(b))
	}
	d := newSummary(int(m))
	d.items = make([]string, 0, count)
	d.vals = make([]uint64, 0, count)
	var prev []byte
	for i := uint64(0); i < count; i++ {
		l, n, err := uvarint(b)
		if err != nil {
			return err
		}
		b = b[n:]
		if l < 1 || l > MaxItemBytes || l > uint64(len(b)) {
			return corrupt("entry %d: item of %d bytes", i, l)
		}
		item := b[:l]
		b = b[l:]
		if i > 0 && bytes.Compare(prev, item) >= 0 {
			return corrupt("entry %d: items not in strictly ascending order", i)
		}
		prev = item
		c, n, err := uvarint(b)
		if err != nil {
			return err
		}
		b = b[n:]
		if c < 1 || c > budget {
			return corrupt("entry %d: counter %d (1..%d left by the total)", i, c, budget)
		}
		budget -= c
		d.push(string(item), c)
	}
	if len(b) != 0 {
		return corrupt("%d bytes after the last entry", len(b))
	}
	d.total, d.offset = total, offset
	*s = *d
	return nil
}
