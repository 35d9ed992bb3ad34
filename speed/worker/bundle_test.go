package worker

import (
	"bytes"
	"errors"
	"testing"
)

func TestBundle(t *testing.T) {
	win, top := []byte("TWIN\x01window-state"), []byte("TTOP\x01topics-state")
	t.Run("bare window snapshot", func(t *testing.T) {
		b := bundle(win, nil)
		if !bytes.Equal(b, win) {
			t.Fatalf("without topics the state must stay a bare window snapshot: %q", b)
		}
		w, tp, err := unbundle(b)
		if err != nil || !bytes.Equal(w, win) || tp != nil {
			t.Fatalf("unbundle = %q, %q, %v", w, tp, err)
		}
	})
	t.Run("round trip", func(t *testing.T) {
		w, tp, err := unbundle(bundle(win, top))
		if err != nil || !bytes.Equal(w, win) || !bytes.Equal(tp, top) {
			t.Fatalf("unbundle = %q, %q, %v", w, tp, err)
		}
		w, tp, err = unbundle(bundle(nil, []byte{}))
		if err != nil || len(w) != 0 || tp == nil || len(tp) != 0 {
			t.Fatalf("empty parts: %q, %q, %v", w, tp, err)
		}
	})
	t.Run("corrupt", func(t *testing.T) {
		good := bundle(win, top)
		for name, b := range map[string][]byte{
			"version":    append([]byte("TBND\x02"), good[5:]...),
			"truncated":  good[:len(good)-1],
			"trailing":   append(append([]byte{}, good...), 0),
			"huge len":   append([]byte("TBND\x01\xff\xff\xff\xff\x0f"), good[6:]...),
			"no parts":   []byte("TBND\x01"),
			"magic only": []byte("TBND"),
		} {
			if _, _, err := unbundle(b); !errors.Is(err, errBundle) {
				t.Errorf("%s: %v, want errBundle", name, err)
			}
		}
	})
}

// FuzzUnbundle: no input panics, and whatever unbundles re-bundles to a state that unbundles
// to the same parts (not always the same bytes: a length may be a non-minimal varint).
func FuzzUnbundle(f *testing.F) {
	f.Add(bundle([]byte("TWIN\x01a"), []byte("TTOP\x01b")))
	f.Add([]byte("TWIN\x01"))
	f.Add([]byte("TBND\x01\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, tp, err := unbundle(b)
		if err != nil {
			return
		}
		w2, tp2, err := unbundle(bundle(w, tp))
		if err != nil || !bytes.Equal(w2, w) || !bytes.Equal(tp2, tp) || (tp == nil) != (tp2 == nil) {
			t.Fatalf("%q: parts %q %q re-bundle to %q %q (%v)", b, w, tp, w2, tp2, err)
		}
	})
}
