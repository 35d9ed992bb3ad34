package sketch

import "math/bits"

// Bulk updates of many hashed keys at once: a closed minute's entries added
// to a window's sketches (speed/window).
//
// One key at a time, AddHash computes a cell, updates it, computes the next:
// d cells in d rows, random cache lines spread over the whole grid (10.5 MB
// at 2^18 x 5, more than a core's L2), each a likely miss. A batch needs no
// such order, since standard update is a sum, and takes one of two:
//
//   - Row by row, when a row fits well in L2 (rowL2Bytes): all of the
//     batch's cells of row 0, then of row 1, ..., so each pass updates one row
//     (512 KB at 2^16), which stays in cache for the pass, while the hashes and
//     counts stream in order. The column of key h in row i is computed directly
//     as h1 + i*h2 + i*i*h3 (hash.go), the closed form of probe's walk.
//   - In blocks of keys, when rows are larger (2 MB at 2^18): the cell indexes
//     of addBlock keys first, then their updates, so the block's d*addBlock
//     loads are independent and in flight together instead of interleaved with
//     the index arithmetic.
//
// Either way the cells are exactly those AddHash updates (TestAddHashesIsAddHash).
// BENCHMARKS.md ("Speed core") has the measurements that chose them. Bulk
// estimates in the same two orders were measured too and gained nothing over
// EstimateHash one key at a time (its loads do not wait on one another), so
// there is no EstimateHashes.

const (
	// rowL2Bytes is the largest row (Width*8 bytes) updated row by row: half
	// of the 2 MB L2 of the machine measured, so a row stays in it with the
	// hashes streaming past.
	rowL2Bytes = 1 << 20
	// addBlock is the number of keys whose cells are computed before any is
	// touched.
	addBlock = 64
)

// AddHashes counts ns[i] more occurrences of the key whose Hash is hs[i], for
// every i: afterwards s is cell for cell and in Total what calling
// AddHash(hs[i], ns[i]) for i = 0, 1, ... would leave, saturation included. It
// panics if the slices' lengths differ. It does not allocate.
//
// With standard update the cells are sums and the order of the additions does
// not matter, so the batch is applied in a cache-friendlier order (see
// above). Conservative update depends on the order, so a conservative sketch
// takes the keys one by one, in slice order, as AddHash would; so does a
// batch whose counts would saturate Total, so that the cut falls on the same
// key.
func (s *Sketch) AddHashes(hs, ns []uint64) {
	if len(hs) != len(ns) {
		panic("sketch: AddHashes: len(hs) != len(ns)")
	}
	var sum, carry uint64
	for _, n := range ns {
		var c uint64
		sum, c = bits.Add64(sum, n, 0)
		carry |= c
	}
	total, c := bits.Add64(s.total, sum, 0)
	if carry != 0 || c != 0 || s.cfg.Conservative {
		for i, h := range hs {
			s.AddHash(h, ns[i])
		}
		return
	}
	s.total = total
	if s.width*8 <= rowL2Bytes {
		s.addRows(hs, ns)
	} else {
		s.addBlocks(hs, ns)
	}
}

// addRows adds the batch one row at a time.
func (s *Sketch) addRows(hs, ns []uint64) {
	mask := s.mask
	ns = ns[:len(hs)]
	for i := 0; i < s.depth; i++ {
		row := s.counters[i*s.width : (i+1)*s.width]
		ui := uint32(i)
		ii := ui * ui
		for j, h := range hs {
			h1, h2 := uint32(h), uint32(h>>32)
			h3 := uint32(((h ^ h>>29) * mix3) >> 32)
			row[(h1+ui*h2+ii*h3)&mask] += ns[j]
		}
	}
}

// addBlocks adds the batch addBlock keys at a time, each block's cell
// indexes computed before its cells are touched.
func (s *Sketch) addBlocks(hs, ns []uint64) {
	var idx [addBlock * MaxDepth]uint32 // cell indexes < MaxBytes/8 = 2^27
	c, w, mask := s.counters, s.width, s.mask
	end := s.depth * w
	for start := 0; start < len(hs); start += addBlock {
		bh := hs[start:min(start+addBlock, len(hs))]
		bn := ns[start : start+len(bh)]
		k := 0
		for _, h := range bh {
			col, step, step2 := probe(h)
			for off := 0; off < end; off += w {
				idx[k] = uint32(off) + col&mask
				k++
				col += step
				step += step2
			}
		}
		d := s.depth
		k = 0
		for _, n := range bn {
			for _, j := range idx[k : k+d] {
				c[j] += n
			}
			k += d
		}
	}
}
