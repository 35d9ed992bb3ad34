// Package sketch owns the count-min sketch of the speed layer: a fixed grid
// of Depth x Width uint64 counters that estimates how often each key was seen,
// never below the truth and above it by at most (e/Width)*N with probability
// 1-e^-Depth, where N is Total().
//
// Sketches that share Width, Depth and Seed are additive cell by cell, which
// is what the sliding windows are built on (docs/requirements.md, "Sketches"):
// a window is the Merge of its per-minute (or per-day) bucket sketches, and it
// slides by merging the newest bucket and subtracting the one that fell out.
//
// The hash (XXH3-64 plus triple hashing, see hash.go) and the binary encoding
// (docs/format/sketch.md) are stable across processes and versions, so a
// sketch checkpointed on one machine can be restored and merged on another.
//
// A Sketch is not safe for concurrent use: each partition's state is owned by
// one goroutine. Concurrent Estimate calls with no writer are safe.
//
// In detail (DESIGN.md's file map has the line): count-min sketch: d x w uint64 counters
// in one slice, standard or conservative update, `AddHashes` for a batch of hashed keys (a
// closed minute; the same cells as one by one, in a cache-friendlier order, `bulk.go`),
// Merge and Subtract for sliding windows, the error bound, a stable checksummed encoding
// (format (docs/format/sketch.md)); `presence.go`: `Presence`, a sketch's cells above a
// threshold in one bit a cell, which answers "was this key's estimate above it" exactly
// after the sketch is gone (the topics hold rule's closed hours); `float.go`: `Float`, the
// same grid with float64 cells for decayed windows, `Scale` by an exact power of two, its
// encoding
package sketch

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/zeebo/xxh3"

	"trending/internal/setting"
)

const (
	// DefaultWidth is 2^18 columns: with Depth 5 an estimate of a month's
	// count on one of 32 partitions (N ~ 4.7e9) is high by at most ~48,600
	// views with probability 99.3%, in 10.5 MB: under 5% of a month's
	// 100th count of a million (docs/requirements.md, "Sketches").
	DefaultWidth = 1 << 18
	// DefaultDepth is 5 rows: a bad estimate has probability e^-5 ~ 0.7%.
	DefaultDepth = 5
	// MaxDepth bounds Depth; beyond 16 rows the failure probability
	// (e^-16 ~ 1e-7) stops improving anything that matters.
	MaxDepth = 16
	// MaxBytes bounds the counters' memory (Width*Depth*8), 1 GiB: about
	// 100 times the default, which leaves room for the 10x-scale grids while
	// stopping a corrupt or hostile header from asking for terabytes.
	MaxBytes = 1 << 30
)

// Config is the shape and behaviour of a sketch. Sketches combine (Merge,
// Subtract) only when Width, Depth and Seed are equal. Start from
// DefaultConfig: a zero field means zero, and a zero Width or Depth is
// refused.
type Config struct {
	// Width is the number of columns per row: a power of two (so a column is
	// a mask of the hash, not a division), 1 <= Width and
	// Width*Depth*8 <= MaxBytes. Zero is refused; DefaultConfig has
	// DefaultWidth (2^18). The overcount bound is (e/Width)*N.
	Width int
	// Depth is the number of rows, 1..MaxDepth. Zero is refused;
	// DefaultConfig has DefaultDepth (5). The bound holds with probability
	// 1-e^-Depth.
	Depth int
	// Seed seeds the key hash (XXH3-64). Default 0. Sketches with different
	// seeds put the same key in different cells and cannot be combined.
	Seed uint64
	// Conservative selects conservative update: Add raises each of the key's
	// cells only to (current estimate + n), never beyond, which cuts the
	// overcount of rare keys. Default false. A conservative sketch's cells
	// are no longer the sum of its buckets, so it must never take part in a
	// Subtract (ErrConservativeSubtract): use it only for sketches that are
	// built and merged but never subtracted. Merge accepts mixed flags; the
	// flag only changes how Add updates the receiver.
	Conservative bool
}

// DefaultConfig returns the month sketch's sizing (docs/requirements.md): 2^18
// x 5, seed 0, standard update, 10.5 MB of counters. It is the one place the
// defaults live.
func DefaultConfig() Config {
	return Config{Width: DefaultWidth, Depth: DefaultDepth}
}

// invalid is a setting error for field that wraps both ErrConfig and
// setting.ErrConfig.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %w", ErrConfig, setting.Invalid(field, format, args...))
}

// Validate reports whether c can build a sketch; every error wraps ErrConfig
// and setting.ErrConfig, names the field (Width, Depth) and says what to
// change.
func (c Config) Validate() error {
	var errs []error
	switch {
	case c.Width == 0:
		errs = append(errs, invalid("Width", "must be positive (default %v)", DefaultWidth))
	case c.Width < 0:
		errs = append(errs, invalid("Width", "%d is negative: use a power of two such as %d", c.Width, DefaultWidth))
	case c.Width&(c.Width-1) != 0:
		lo := 1 << (bits.Len(uint(c.Width)) - 1)
		errs = append(errs, invalid("Width", "%d is not a power of two: use %d or %d", c.Width, lo, lo*2))
	}
	switch {
	case c.Depth == 0:
		errs = append(errs, invalid("Depth", "must be positive (default %v)", DefaultDepth))
	case c.Depth < 0 || c.Depth > MaxDepth:
		errs = append(errs, invalid("Depth", "%d is out of range: use 1..%d (default %d)", c.Depth, MaxDepth, DefaultDepth))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if c.Width > MaxBytes/8/c.Depth {
		return invalid("Width", "%d x depth %d needs %d bytes, over the %d-byte limit: lower width or depth",
			c.Width, c.Depth, uint64(c.Width)*uint64(c.Depth)*8, MaxBytes)
	}
	return nil
}

// Bytes returns the memory of the counters, Width*Depth*8 bytes. The Sketch
// struct adds about 100 bytes.
func (c Config) Bytes() int {
	return c.Width * c.Depth * 8
}

// Sketch is a count-min sketch: Depth rows of Width uint64 counters in one
// flat row-major slice, plus the total N of all counts added. Build one with
// New; the zero Sketch has no cells and is only a target for UnmarshalBinary
// or CopyFrom.
type Sketch struct {
	cfg      Config
	counters []uint64 // row i is counters[i*width : (i+1)*width]
	mask     uint32   // width-1
	width    int
	depth    int
	total    uint64
}

// New returns an empty sketch for cfg, or an error wrapping ErrConfig.
func New(cfg Config) (*Sketch, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newSketch(cfg), nil
}

// newSketch builds a sketch for a validated config.
func newSketch(cfg Config) *Sketch {
	return &Sketch{
		cfg:      cfg,
		counters: make([]uint64, cfg.Width*cfg.Depth),
		mask:     uint32(cfg.Width - 1),
		width:    cfg.Width,
		depth:    cfg.Depth,
	}
}

// Config returns the sketch's configuration, with defaults filled in.
func (s *Sketch) Config() Config { return s.cfg }

// Total returns N, the sum of all counts added and merged minus those
// subtracted. The error bound scales with it.
func (s *Sketch) Total() uint64 { return s.total }

// Hash returns the 64-bit hash of key under this sketch's seed. A caller that
// feeds the same key to several sketches with the same Seed (a minute bucket
// and the running window) hashes once and calls AddHash on each.
func (s *Sketch) Hash(key []byte) uint64 { return xxh3.HashSeed(key, s.cfg.Seed) }

// HashString is Hash for a string key, without allocating.
func (s *Sketch) HashString(key string) uint64 { return xxh3.HashStringSeed(key, s.cfg.Seed) }

// KeyHash is Hash without a sketch: the hash of key under seed, for callers
// that hash once and feed AddHash/EstimateHash of several sketches sharing
// that Seed.
func KeyHash(seed uint64, key []byte) uint64 { return xxh3.HashSeed(key, seed) }

// KeyHashString is KeyHash for a string key, without allocating.
func KeyHashString(seed uint64, key string) uint64 { return xxh3.HashStringSeed(key, seed) }

// Add counts n more occurrences of key. It does not allocate.
func (s *Sketch) Add(key []byte, n uint64) { s.AddHash(xxh3.HashSeed(key, s.cfg.Seed), n) }

// AddString is Add for a string key. It does not allocate.
func (s *Sketch) AddString(key string, n uint64) { s.AddHash(xxh3.HashStringSeed(key, s.cfg.Seed), n) }

// AddHash counts n more occurrences of the key whose Hash (under a sketch
// with the same Seed) is h. Counts saturate: if Total would pass 2^64-1, n is
// cut so that it does not, which keeps every cell <= Total (and so Merge's
// overflow check exact) instead of wrapping.
func (s *Sketch) AddHash(h, n uint64) {
	if s.total+n < s.total {
		n = math.MaxUint64 - s.total
	}
	s.total += n
	if s.cfg.Conservative {
		s.addConservative(h, n)
		return
	}
	col, step, step2 := probe(h)
	c, w, mask := s.counters, s.width, s.mask
	for off := 0; off < len(c); off += w {
		c[off+int(col&mask)] += n
		col += step
		step += step2
	}
}

// addConservative raises each of the key's cells to at least min+n, where
// min is the key's current estimate (Estan and Varghese's conservative
// update). Cells already above min+n hold other keys' counts and are left
// alone. The estimate stays >= the truth: min was >= the key's old count.
func (s *Sketch) addConservative(h, n uint64) {
	var idx [MaxDepth]int
	col, step, step2 := probe(h)
	c, w, mask := s.counters, s.width, s.mask
	d := s.depth
	lo := uint64(math.MaxUint64)
	for i, off := 0, 0; i < d; i, off = i+1, off+w {
		j := off + int(col&mask)
		idx[i] = j
		lo = min(lo, c[j])
		col += step
		step += step2
	}
	// lo <= old Total, so lo+n <= Total <= 2^64-1: no overflow.
	target := lo + n
	for _, j := range idx[:d] {
		if c[j] < target {
			c[j] = target
		}
	}
}

// Estimate returns the estimated count of key: never below the true count,
// and above it by at most ErrorBound().MaxOvercount with probability
// ErrorBound().Probability. It does not allocate.
func (s *Sketch) Estimate(key []byte) uint64 { return s.EstimateHash(xxh3.HashSeed(key, s.cfg.Seed)) }

// EstimateString is Estimate for a string key. It does not allocate.
func (s *Sketch) EstimateString(key string) uint64 {
	return s.EstimateHash(xxh3.HashStringSeed(key, s.cfg.Seed))
}

// EstimateHash is Estimate for a key whose Hash (under a sketch with the
// same Seed) is h.
func (s *Sketch) EstimateHash(h uint64) uint64 {
	col, step, step2 := probe(h)
	c, w, mask := s.counters, s.width, s.mask
	est := uint64(math.MaxUint64)
	for off := 0; off < len(c); off += w {
		est = min(est, c[off+int(col&mask)])
		col += step
		step += step2
	}
	return est
}

// EstimateHashWithout estimates h's count in s minus the sketches os, without changing s:
// the estimate s would give after Subtract of each (the caller guarantees they were added to
// s, as a sliding window's buckets are). Each o must be compatible with s.
func (s *Sketch) EstimateHashWithout(h uint64, os ...*Sketch) uint64 {
	col, step, step2 := probe(h)
	c, w, mask := s.counters, s.width, s.mask
	est := uint64(math.MaxUint64)
	for off := 0; off < len(c); off += w {
		i := off + int(col&mask)
		v := c[i]
		for _, o := range os {
			v -= min(v, o.counters[i])
		}
		est = min(est, v)
		col += step
		step += step2
	}
	return est
}

// compatible reports whether o's cells count the same keys as s's.
func (s *Sketch) compatible(op string, o *Sketch) error {
	if o == nil {
		return fmt.Errorf("%s: nil sketch: %w", op, ErrIncompatible)
	}
	a, b := s.cfg, o.cfg
	if a.Width != b.Width || a.Depth != b.Depth || a.Seed != b.Seed {
		return fmt.Errorf("%s: %dx%d seed %d vs %dx%d seed %d: %w",
			op, a.Depth, a.Width, a.Seed, b.Depth, b.Width, b.Seed, ErrIncompatible)
	}
	return nil
}

// Merge adds o into s cell by cell, so s then estimates the union of both
// streams exactly as if it had seen them all. It returns an error wrapping
// ErrIncompatible when Width, Depth or Seed differ, or ErrOverflow when the
// total would pass 2^64-1; s is unchanged on error. Merging sketches with
// different Conservative flags is allowed: the estimates stay >= the truth.
func (s *Sketch) Merge(o *Sketch) error {
	if err := s.compatible("merge", o); err != nil {
		return err
	}
	total, carry := bits.Add64(s.total, o.total, 0)
	if carry != 0 {
		return fmt.Errorf("merge: total %d + %d: %w", s.total, o.total, ErrOverflow)
	}
	// Every cell is <= its sketch's total (each row sums to at most Total),
	// so a total that fits means no cell overflows.
	dst, src := s.counters, o.counters[:len(s.counters)]
	for i := range dst {
		dst[i] += src[i]
	}
	s.total = total
	return nil
}

// Subtract removes o from s cell by cell: the sliding-window step "running
// minus expired bucket". o must have been merged into s before. It returns an
// error wrapping ErrIncompatible when shapes or seeds differ,
// ErrConservativeSubtract when either sketch uses conservative update, and
// ErrUnderflow when any cell or the total would go below zero; s is unchanged
// on error.
func (s *Sketch) Subtract(o *Sketch) error {
	if err := s.compatible("subtract", o); err != nil {
		return err
	}
	if s.cfg.Conservative || o.cfg.Conservative {
		return fmt.Errorf("subtract: receiver conservative=%t, operand conservative=%t: %w",
			s.cfg.Conservative, o.cfg.Conservative, ErrConservativeSubtract)
	}
	if o.total > s.total {
		return fmt.Errorf("subtract: total %d from %d: %w", o.total, s.total, ErrUnderflow)
	}
	// One pass that subtracts, records any borrow and sums each row; the rare
	// failure pays a second pass to add everything back (exact in modular
	// arithmetic). The row sums keep the invariant every row sums to at most
	// Total, which Merge's overflow check and the decoder rely on; a
	// standard operand that was merged in always keeps it.
	total := s.total - o.total
	dst, src := s.counters, o.counters[:len(s.counters)]
	var borrow uint64
	rowOver := false
	for off := 0; off < len(dst); off += s.width {
		row, srow := dst[off:off+s.width], src[off:off+s.width]
		srow = srow[:len(row)]
		var sum uint64
		for i := range row {
			var b uint64
			row[i], b = bits.Sub64(row[i], srow[i], 0)
			borrow |= b
			sum += row[i]
		}
		rowOver = rowOver || sum > total
	}
	if borrow != 0 || rowOver {
		for i := range dst {
			dst[i] += src[i]
		}
		return fmt.Errorf("subtract: the operand was not merged into the receiver (a cell or row would go negative): %w", ErrUnderflow)
	}
	s.total = total
	return nil
}

// Reset zeroes every counter and the total, keeping the memory, so a ring of
// bucket sketches can reuse its slots without allocating.
func (s *Sketch) Reset() {
	clear(s.counters)
	s.total = 0
}

// Clone returns a deep copy of s.
func (s *Sketch) Clone() *Sketch {
	c := *s
	c.counters = append([]uint64(nil), s.counters...)
	return &c
}

// CopyFrom makes s an exact copy of o, reusing s's memory when the shapes
// match: the allocation-free form of Clone for snapshots.
func (s *Sketch) CopyFrom(o *Sketch) {
	if len(s.counters) != len(o.counters) {
		s.counters = make([]uint64, len(o.counters))
	}
	copy(s.counters, o.counters)
	s.cfg, s.mask, s.width, s.depth, s.total = o.cfg, o.mask, o.width, o.depth, o.total
}

// Equal reports whether s and o have the same configuration, total and
// counters.
func (s *Sketch) Equal(o *Sketch) bool {
	if o == nil || s.cfg != o.cfg || s.total != o.total || len(s.counters) != len(o.counters) {
		return false
	}
	for i, v := range s.counters {
		if o.counters[i] != v {
			return false
		}
	}
	return true
}

// Bound is the count-min guarantee for one key: its estimate exceeds its true
// count by at most MaxOvercount with probability at least Probability.
type Bound struct {
	// MaxOvercount is (e/Width) * N.
	MaxOvercount float64
	// Probability is 1 - e^-Depth.
	Probability float64
}

// ErrorBound returns the guarantee for s at its current Total. A served list
// states it next to the counts.
func (s *Sketch) ErrorBound() Bound { return BoundFor(s.width, s.depth, s.total) }

// BoundFor returns the guarantee of a width x depth sketch holding total
// counts: overcount <= (e/width)*total with probability 1-e^-depth (Cormode
// and Muthukrishnan 2005). It is how to size a sketch before building one.
func BoundFor(width, depth int, total uint64) Bound {
	if width <= 0 || depth <= 0 {
		return Bound{MaxOvercount: math.Inf(1), Probability: 0}
	}
	return Bound{
		MaxOvercount: math.E / float64(width) * float64(total),
		Probability:  1 - math.Exp(-float64(depth)),
	}
}
