package window

import (
	"bytes"
	"encoding/binary"
	"errors"
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

// TestIncrementalItemRefs: a version-5 manifest names the items of its open minute that an
// earlier minute of the ring holds by reference into that minute's piece, the others by
// name, and restores to the same state.
func TestIncrementalItemRefs(t *testing.T) {
	cfg := snapTestConfig()
	p, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ps := pieceStore{}
	// Items 0-99 every minute; in the last minute also 100-119, new.
	for m := range 30 {
		for i := range 100 {
			p.Add(event.Event{ItemID: fmt.Sprintf("item-%03d", i), Count: 1, TS: t0.Add(time.Duration(m)*time.Minute + time.Duration(i)*100*time.Millisecond)})
		}
		if m == 20 {
			ps.save(t, p)
		}
	}
	for i := 100; i < 120; i++ {
		p.Add(event.Event{ItemID: fmt.Sprintf("item-%03d", i), Count: 2, TS: t0.Add(29*time.Minute + 30*time.Second)})
	}
	state, pieces, _ := ps.save(t, p)
	if v := state[len(snapMagic)]; v != snapV5 {
		t.Fatalf("version %d, want %d", v, snapV5)
	}
	inc := &incDecoder{pieces: make([]parsedPiece, len(pieces)), used: make([]bool, len(pieces))}
	for i, pc := range pieces {
		inc.pieces[i] = parsedPiece{name: pc.Name, data: pc.Data}
		inc.pieces[i].parse(cfg.Sketch)
	}
	d := &decoder{b: state[:len(state)-crcLen], off: len(snapMagic) + 1, version: snapV5, inc: inc}
	d.str()
	d.header(&Partition{})
	d.uv() // alive
	n := d.count(2)
	byRef, byName := 0, 0
	names := map[string]bool{}
	for range n {
		at := d.off
		if d.uv() == 0 {
			byName++
		} else {
			byRef++
		}
		d.off = at
		names[d.itemRef()] = true
	}
	if d.err != nil {
		t.Fatal(d.err)
	}
	// The first open minute: its items are the table's first, written as a run of counts.
	openAt := d.off
	if nOpen := d.uv(); nOpen == 0 {
		t.Fatal("no open minute")
	}
	d.sv()
	nEnt := d.uv()
	runAt := d.off
	run := d.uv()
	runEnd := d.off
	if run == 0 || run > nEnt {
		t.Fatalf("open minute of %d entries has a run of %d", nEnt, run)
	}
	_ = openAt
	for name, bad := range map[string]uint64{"run past the entries": nEnt + 1, "run past the table": uint64(n) + 1, "huge run": 1 << 40} {
		b := append(append(append([]byte(nil), state[:runAt]...), binary.AppendUvarint(nil, bad)...), state[runEnd:]...)
		if _, err := RestoreIncremental(cfg, reseal(b), pieces); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if byRef < 100 || byName < 20 || len(names) != n {
		t.Fatalf("%d items by reference, %d by name (%d distinct of %d): want the 100 recurring by reference and the 20 new by name", byRef, byName, len(names), n)
	}
	q, err := RestoreIncremental(cfg, state, pieces)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mustMarshal(t, q), mustMarshal(t, p)) {
		t.Fatal("restored state differs")
	}

	// A reference past a piece's entries, to a piece that is not an exact bucket's or past
	// the list, or naming an item the table already holds, is corrupt: an error, never a
	// panic. The first item by reference is replaced by each.
	d = &decoder{b: state[:len(state)-crcLen], off: len(snapMagic) + 1, version: snapV5, inc: inc}
	d.str()
	d.header(&Partition{})
	d.uv()
	d.count(2)
	// The first two items by reference (piece, entry), where each is in the table: the
	// second is replaced by each bad reference (a tag and a number), the first by a
	// relative reference with none before it.
	var ats, ends []int
	var refs [][2]uint64
	for len(refs) < 2 {
		at := d.off
		if d.uv() == 0 {
			d.str()
			continue
		}
		d.off = at
		d.itemRef()
		ats, ends = append(ats, at), append(ends, d.off)
		refs = append(refs, [2]uint64{d.refPiece, d.refEntry})
	}
	if d.err != nil {
		t.Fatal(d.err)
	}
	pos := refs[1][0]
	sketchPos := 0
	for i := range inc.pieces {
		if inc.pieces[i].kind != pieceExact {
			sketchPos = i + 1
		}
	}
	type bad struct {
		first    bool // replace the first reference, not the second
		tag, num uint64
	}
	for name, ref := range map[string]bad{
		"entry past the piece":           {false, 2 + pos, uint64(len(inc.pieces[pos-1].ents))},
		"huge entry":                     {false, 2 + pos, 1 << 40},
		"a sketch piece":                 {false, 2 + uint64(sketchPos), 0},
		"piece past the list":            {false, 2 + uint64(len(pieces)+1), 0},
		"an item named before":           {false, 2 + refs[0][0], refs[0][1]},
		"relative past the piece":        {false, 2, uint64(len(inc.pieces[refs[0][0]-1].ents))},
		"relative huge gap":              {false, 2, 1 << 40},
		"relative with no reference yet": {true, 2, 0},
		"next with no reference yet":     {true, 1, 0},
	} {
		at, end := ats[1], ends[1]
		if ref.first {
			at, end = ats[0], ends[0]
		}
		mid := binary.AppendUvarint(binary.AppendUvarint(nil, ref.tag), ref.num)
		if ref.tag == 1 {
			mid = binary.AppendUvarint(nil, 1)
		}
		bad := append(append(append([]byte(nil), state[:at]...), mid...), state[end:]...)
		bad = reseal(bad)
		if _, err := RestoreIncremental(cfg, bad, pieces); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%s: %v, want ErrCorrupt", name, err)
		}
	}
}
