package window

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"unsafe"
)

// TestShortTableMatchesMap: random puts, gets and removes over a small key space, with
// lengths 0..shortMax and keys that differ only by trailing zero bytes, agree with a map at
// every step, through growth and long probe runs; every key stays findable after the
// backward shifts of removes.
func TestShortTableMatchesMap(t *testing.T) {
	if unsafe.Sizeof(shortSlot{}) != shortSlotBytes {
		t.Fatalf("shortSlot is %d bytes, shortSlotBytes says %d", unsafe.Sizeof(shortSlot{}), shortSlotBytes)
	}
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 1))
			tab, model := newShortTable(), map[string]uint32{}
			keys := make([]string, 3000)
			for i := range keys {
				keys[i] = fmt.Sprintf("%x", i)[:min(len(fmt.Sprintf("%x", i)), shortMax)]
				if i%7 == 0 {
					keys[i] += "\x00"
				}
			}
			keys = append(keys, "", "\x00", "\x00\x00", "123456789012345")
			for step := range 200_000 {
				s := keys[rng.IntN(len(keys))]
				k := makeShortKey(s)
				h := tab.hash(&k)
				id, ok := tab.get(&k, h)
				mid, mok := model[s]
				if ok != mok || id != mid {
					t.Fatalf("step %d: get(%q) = %d, %v; the map says %d, %v", step, s, id, ok, mid, mok)
				}
				switch {
				case !ok && rng.IntN(3) > 0:
					id := uint32(rng.IntN(1 << 20))
					tab.put(&k, h, id)
					model[s] = id
				case ok && rng.IntN(2) == 0:
					tab.remove(&k, h)
					delete(model, s)
				}
				if tab.n != len(model) {
					t.Fatalf("step %d: %d in the table, %d in the map", step, tab.n, len(model))
				}
			}
			for s, want := range model {
				k := makeShortKey(s)
				if id, ok := tab.get(&k, tab.hash(&k)); !ok || id != want {
					t.Fatalf("%q: %d, %v; want %d", s, id, ok, want)
				}
			}
		})
	}
}

// TestInternShortAndLong: ids on both sides of shortMax intern to distinct handles, are
// found again, and are freed and reused.
func TestInternShortAndLong(t *testing.T) {
	in := newInterner()
	ids := []string{"a", "a\x00", "123456789012345", "1234567890123456", "12345678901234567890"}
	got := map[uint32]string{}
	for _, s := range ids {
		id := intern(in, []byte(s))
		if prev, dup := got[id]; dup {
			t.Fatalf("%q and %q share handle %d", s, prev, id)
		}
		got[id] = s
		if again := in.intern(s); again != id {
			t.Fatalf("%q: %d, then %d", s, id, again)
		}
	}
	if in.live() != len(ids) {
		t.Fatalf("live %d, want %d", in.live(), len(ids))
	}
	for id := range got {
		in.releaseIfUnused(id)
	}
	if in.live() != 0 || in.short.n != 0 || len(in.ids) != 0 {
		t.Fatalf("after release: live %d", in.live())
	}
}
