package worker

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
	"time"

	"trending/speed/window"
)

func TestBundle(t *testing.T) {
	win, top := []byte("TWIN\x01window-state"), []byte("TTOP\x01topics-state")
	tracked := encodeTracked([]window.TrackedItem{{Item: "a", Last: time.Unix(600, 0).UTC()}, {Item: "hot", Last: time.Unix(1_794_650_700, 0).UTC()}})
	t.Run("bare window snapshot", func(t *testing.T) {
		b := bundle(win, nil, nil)
		if !bytes.Equal(b, win) {
			t.Fatalf("without topics the state must stay a bare window snapshot: %q", b)
		}
		w, tp, tr, err := unbundle(b)
		if err != nil || !bytes.Equal(w, win) || tp != nil || tr != nil {
			t.Fatalf("unbundle = %q, %q, %q, %v", w, tp, tr, err)
		}
	})
	t.Run("version 1 without tracked items", func(t *testing.T) {
		b := bundle(win, top, nil)
		if b[len(bundleMagic)] != bundleV1 {
			t.Fatalf("version %d: without tracked items a build without salting must read it", b[len(bundleMagic)])
		}
	})
	t.Run("round trip", func(t *testing.T) {
		for _, c := range []struct{ top, tracked []byte }{{top, nil}, {top, tracked}, {nil, tracked}, {[]byte{}, nil}} {
			w, tp, tr, err := unbundle(bundle(win, c.top, c.tracked))
			if err != nil || !bytes.Equal(w, win) || !bytes.Equal(tp, c.top) || (tp == nil) != (c.top == nil) || !bytes.Equal(tr, c.tracked) || (tr == nil) != (c.tracked == nil) {
				t.Fatalf("top %q tracked %q: unbundle = %q, %q, %q, %v", c.top, c.tracked, w, tp, tr, err)
			}
		}
		w, tp, _, err := unbundle(bundle(nil, []byte{}, nil))
		if err != nil || len(w) != 0 || tp == nil || len(tp) != 0 {
			t.Fatalf("empty parts: %q, %q, %v", w, tp, err)
		}
	})
	t.Run("corrupt", func(t *testing.T) {
		good, good2 := bundle(win, top, nil), bundle(win, top, tracked)
		for name, b := range map[string][]byte{
			"version":          append([]byte("TBND\x03"), good[5:]...),
			"truncated":        good[:len(good)-1],
			"trailing":         append(append([]byte{}, good...), 0),
			"huge len":         append([]byte("TBND\x01\xff\xff\xff\xff\x0f"), good[6:]...),
			"no parts":         []byte("TBND\x01"),
			"magic only":       []byte("TBND"),
			"v2 truncated":     good2[:len(good2)-1],
			"v2 trailing":      append(append([]byte{}, good2...), 0),
			"v2 unknown flags": bytes.Replace(good2, append(win, 3), append(win, 7), 1),
			"v2 no tracked":    bytes.Replace(good2, append(win, 3), append(win, 1), 1),
		} {
			if _, _, _, err := unbundle(b); !errors.Is(err, errBundle) {
				t.Errorf("%s: %v, want errBundle", name, err)
			}
		}
	})
}

func TestTrackedPart(t *testing.T) {
	items := []window.TrackedItem{{Item: "#go", Last: time.Unix(-120, 0).UTC()}, {Item: "V7", Last: time.Unix(1_794_650_700, 0).UTC()}}
	got, err := decodeTracked(encodeTracked(items))
	if err != nil || !reflect.DeepEqual(got, items) {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	if encodeTracked(nil) != nil {
		t.Fatal("no tracked items: want no part")
	}
	good := encodeTracked(items)
	for name, b := range map[string][]byte{
		"empty":     {},
		"zero":      {0},
		"order":     encodeTracked([]window.TrackedItem{items[1], items[0]}),
		"duplicate": encodeTracked([]window.TrackedItem{items[0], items[0]}),
		"truncated": good[:len(good)-1],
		"trailing":  append(append([]byte{}, good...), 0),
		"empty id":  {1, 0, 0},
	} {
		if _, err := decodeTracked(b); !errors.Is(err, errBundle) {
			t.Errorf("%s: %v, want errBundle", name, err)
		}
	}
}

// FuzzUnbundle: no input panics, and whatever unbundles re-bundles to a state that unbundles
// to the same parts (not always the same bytes: a length may be a non-minimal varint).
func FuzzUnbundle(f *testing.F) {
	f.Add(bundle([]byte("TWIN\x01a"), []byte("TTOP\x01b"), nil))
	f.Add(bundle([]byte("TWIN\x01a"), nil, encodeTracked([]window.TrackedItem{{Item: "x", Last: time.Unix(60, 0)}})))
	f.Add([]byte("TWIN\x01"))
	f.Add([]byte("TBND\x01\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, tp, tr, err := unbundle(b)
		if err != nil {
			return
		}
		if tr != nil {
			if items, err := decodeTracked(tr); err == nil && !bytes.Equal(encodeTracked(items), tr) && len(items) > 0 {
				// Re-encoding is canonical up to varint form: it must decode to the same items.
				again, err := decodeTracked(encodeTracked(items))
				if err != nil || !reflect.DeepEqual(again, items) {
					t.Fatalf("tracked items %v re-encode to %v (%v)", items, again, err)
				}
			}
		}
		w2, tp2, tr2, err := unbundle(bundle(w, tp, tr))
		if err != nil || !bytes.Equal(w2, w) || !bytes.Equal(tp2, tp) || (tp == nil) != (tp2 == nil) || !bytes.Equal(tr2, tr) || (tr == nil) != (tr2 == nil) {
			t.Fatalf("%q: parts %q %q %q re-bundle to %q %q %q (%v)", b, w, tp, tr, w2, tp2, tr2, err)
		}
	})
}
