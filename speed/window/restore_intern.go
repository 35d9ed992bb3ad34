package window

import (
	"hash/maphash"
	"runtime"
	"sync"
)

// Restoring an incremental snapshot interns every item of its exact pieces: at the seed's
// scale 3.3M entries naming 1.47M items (1/8 of a partition), each looked up once per piece
// that holds it. Looked up in piece order, each is a random probe of a table of tens of
// megabytes: a cache miss or several (an absent item probes to the end of its run), which
// was most of the restore's CPU. Instead every entry becomes a record of its key (the item's
// bytes, at most shortMax) and its short-table hash, made on every core; the records are
// sorted by their home slot in the table (a radix sort, stable) and interned in that order,
// so that the table is read and filled front to back and the records are read in sequence:
// memory speed. Each entry's handle goes to its piece's ids, which the buckets read. The
// table and everything restored are what interning in piece order gives, up to which handle
// names which item (handles are never stored). Items longer than shortMax (the interner's
// map) are interned as before.

// internRec is one exact entry to intern: hk is the key's hash (low 32 bits) << 32 | the
// entry's index among all exact entries; k[shortMax] is 0xff for an item too long for k.
type internRec struct {
	hk uint64
	k  shortKey
}

const longRec = 0xff

// internPieces interns the items of every exact piece, setting each piece's ids. The
// manifest's own item table is interned before (its handles are its indexes).
func (inc *incDecoder) internPieces(p *Partition) {
	var exact []*parsedPiece
	bases := []int{0}
	total := 0
	for i := range inc.pieces {
		if pp := &inc.pieces[i]; pp.kind == pieceExact {
			exact = append(exact, pp)
			total += len(pp.ents)
			bases = append(bases, total)
		}
	}
	if total == 0 || total > 1<<32-1 {
		return // intern in piece order (ids nil)
	}
	ids := make([]uint32, total)
	recs := make([]internRec, total)
	seed := p.in.short.seed
	// One piece at a time per core: the pieces are many (a minute ring's 60 and more).
	var next int
	var mu sync.Mutex
	parallel(runtime.GOMAXPROCS(0), func(int, int) {
		for {
			mu.Lock()
			pi := next
			next++
			mu.Unlock()
			if pi >= len(exact) {
				return
			}
			pp, base := exact[pi], bases[pi]
			for j, x := range pp.ents {
				r := &recs[base+j]
				if x.n > shortMax {
					r.hk, r.k[shortMax] = uint64(base+j), longRec
					continue
				}
				r.k = makeShortKey(pp.data[x.off : x.off+x.n])
				r.hk = uint64(uint32(maphash.Bytes(seed, r.k[:])))<<32 | uint64(base+j)
			}
		}
	})
	// The table's size now: the snapshot's hint reserved room for the items it holds. If
	// it must grow anyway, the order is no longer front to back, but still correct.
	radixSortHome(recs, uint32(len(p.in.short.slots)-1))
	for i := range recs {
		r := &recs[i]
		if r.k[shortMax] == longRec {
			continue
		}
		ids[uint32(r.hk)] = p.in.internShortKey(&r.k, r.hk>>32)
	}
	recs = nil
	for pi, pp := range exact {
		pp.ids = ids[bases[pi]:bases[pi+1]:bases[pi+1]]
		for j, x := range pp.ents {
			if x.n > shortMax {
				pp.ids[j] = intern(p.in, pp.data[x.off:x.off+x.n])
			}
		}
	}
}

// radixSortHome sorts recs by their home slot, uint32(hk>>32) & mask, stably: a
// least-significant-digit radix sort, 11 bits a pass.
func radixSortHome(recs []internRec, mask uint32) {
	const digit = 11
	bits := 0
	for mask>>bits != 0 {
		bits++
	}
	if len(recs) < 2 || bits == 0 {
		return
	}
	tmp := make([]internRec, len(recs))
	src, dst := recs, tmp
	var count [1 << digit]int
	for shift := 0; shift < bits; shift += digit {
		clear(count[:])
		for i := range src {
			count[(uint32(src[i].hk>>32)&mask)>>shift&(1<<digit-1)]++
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for i := range src {
			d := (uint32(src[i].hk>>32) & mask) >> shift & (1<<digit - 1)
			dst[count[d]] = src[i]
			count[d]++
		}
		src, dst = dst, src
	}
	if &src[0] != &recs[0] {
		copy(recs, src)
	}
}

// parallel runs fn(lo, hi) over [0, n) split into one range per core.
func parallel(n int, fn func(lo, hi int)) {
	k := min(runtime.GOMAXPROCS(0), n)
	if k <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	for i := range k {
		lo, hi := n*i/k, n*(i+1)/k
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn(lo, hi)
		}()
	}
	wg.Wait()
}

// runAll runs fns on up to one goroutine per core and returns the error of the first (in
// order) that failed.
func runAll(fns ...func() error) error {
	errs := make([]error, len(fns))
	var next int
	var mu sync.Mutex
	parallel(min(runtime.GOMAXPROCS(0), len(fns)), func(int, int) {
		for {
			mu.Lock()
			i := next
			next++
			mu.Unlock()
			if i >= len(fns) {
				return
			}
			errs[i] = fns[i]()
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
