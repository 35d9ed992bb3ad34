package window

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"trending/model/event"
)

// exactPieceBytes encodes an exact bucket piece of the given items (counts 1).
func exactPieceBytes(start int64, items []string) []byte {
	b := append([]byte(pieceMagic), pieceV1, pieceExact)
	b = binary.AppendVarint(b, start)
	b = binary.AppendUvarint(b, uint64(len(items)))
	for _, s := range items {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
		b = binary.AppendUvarint(b, 1)
	}
	return b
}

// TestInternPieces: interning the pieces' items in home-slot order gives every entry the
// handle of its item, one handle per item, the manifest's handles unchanged, and a table
// that finds every item, whether the table was sized for them or grows on the way (a
// snapshot's size hint is only a hint), with short and long items, items in many pieces
// and items the manifest named first.
func TestInternPieces(t *testing.T) {
	for _, reserve := range []bool{false, true} {
		for seed := uint64(1); seed <= 5; seed++ {
			t.Run(fmt.Sprintf("reserve=%v/%d", reserve, seed), func(t *testing.T) {
				r := rand.New(rand.NewPCG(seed, 3))
				name := func() string {
					i := r.IntN(3000)
					if i%7 == 0 {
						return fmt.Sprintf("a-long-item-id-of-more-than-15-bytes-%d", i)
					}
					return fmt.Sprintf("i%d", i)
				}
				p, err := New(snapTestConfig())
				if err != nil {
					t.Fatal(err)
				}
				var manifest []string
				seen := map[string]bool{}
				for range 200 {
					if s := name(); !seen[s] {
						seen[s] = true
						manifest = append(manifest, s)
					}
				}
				for i, s := range manifest {
					if id := p.in.intern(s); id != uint32(i) {
						t.Fatalf("manifest item %d got handle %d", i, id)
					}
				}
				inc := &incDecoder{}
				distinct := map[string]bool{}
				for _, s := range manifest {
					distinct[s] = true
				}
				var items [][]string
				for k := range 1 + r.IntN(40) {
					in := map[string]bool{}
					var its []string
					for range 1 + r.IntN(500) {
						if s := name(); !in[s] {
							in[s] = true
							its = append(its, s)
							distinct[s] = true
						}
					}
					items = append(items, its)
					pp := parsedPiece{name: fmt.Sprint(k), data: exactPieceBytes(int64(1000+k), its)}
					pp.parse(p.cfg.Sketch)
					if pp.err != nil {
						t.Fatal(pp.err)
					}
					inc.pieces = append(inc.pieces, pp)
					if k%5 == 0 { // other kinds of pieces are skipped
						inc.pieces = append(inc.pieces, parsedPiece{kind: pieceSketch})
					}
				}
				if reserve {
					p.in.reserve(len(distinct))
				}
				inc.internPieces(p)
				k := 0
				for i := range inc.pieces {
					pp := &inc.pieces[i]
					if pp.kind != pieceExact {
						continue
					}
					if len(pp.ids) != len(items[k]) {
						t.Fatalf("piece %d: %d ids for %d entries", k, len(pp.ids), len(items[k]))
					}
					for j, s := range items[k] {
						if got := p.in.strs[pp.ids[j]]; got != s {
							t.Fatalf("piece %d entry %d: handle %d names %q, want %q", k, j, pp.ids[j], got, s)
						}
					}
					k++
				}
				if got := p.in.live(); got != len(distinct) {
					t.Fatalf("%d items interned, want %d", got, len(distinct))
				}
				for s := range distinct {
					id, ok := p.in.lookup(s)
					if !ok || p.in.strs[id] != s {
						t.Fatalf("%q not found after interning (%d, %v)", s, id, ok)
					}
				}
				for i, s := range manifest {
					if id, _ := p.in.lookup(s); id != uint32(i) {
						t.Fatalf("manifest item %q moved to handle %d", s, id)
					}
				}
			})
		}
	}
}

// TestRadixSortHome: sorted by home slot, and stable (equal homes keep their order).
func TestRadixSortHome(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, mask := range []uint32{0, 1, 1<<11 - 1, 1<<12 - 1, 1<<23 - 1, 1<<32 - 1} {
		recs := make([]internRec, 5000)
		for i := range recs {
			recs[i].hk = uint64(r.Uint32())<<32 | uint64(i)
		}
		radixSortHome(recs, mask)
		for i := 1; i < len(recs); i++ {
			a, b := uint32(recs[i-1].hk>>32)&mask, uint32(recs[i].hk>>32)&mask
			if a > b || (a == b && uint32(recs[i-1].hk) > uint32(recs[i].hk)) {
				t.Fatalf("mask %#x: out of order at %d: home %d (entry %d) before %d (entry %d)", mask, i, a, uint32(recs[i-1].hk), b, uint32(recs[i].hk))
			}
		}
	}
}

// TestRestoreIncrementalLongItems: a checkpoint of a stream of short and long item ids, many
// of them in several buckets, restores to the same state (the property tests use short ids).
func TestRestoreIncrementalLongItems(t *testing.T) {
	cfg := snapAllConfig()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ps := pieceStore{}
	r := rand.New(rand.NewPCG(7, 8))
	now := t0
	for i := range 20000 {
		now = now.Add(time.Duration(r.IntN(2000)) * time.Millisecond)
		id := fmt.Sprintf("s%d", r.IntN(2000))
		if r.IntN(4) == 0 {
			id = "long-" + strings.Repeat("x", r.IntN(20)) + fmt.Sprint(r.IntN(500))
		}
		p.Add(event.Event{ItemID: id, Count: uint32(1 + r.IntN(3)), TS: now})
		if i%4000 == 3999 {
			state, pieces, _ := ps.save(t, p)
			q, err := RestoreIncremental(cfg, state, pieces)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := mustMarshal(t, p), mustMarshal(t, q); !bytes.Equal(a, b) {
				t.Fatalf("after event %d: restored state differs (%d vs %d bytes)", i, len(b), len(a))
			}
			checkInvariants(t, q)
		}
	}
}
