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
	groups := &groupsPart{spec: "region=eu,us", closed: true, winPieces: 3, states: []groupPart{
		{value: "eu", pieces: 2, state: []byte("TWIN\x04eu"), tracked: tracked}, {value: "us", pieces: 0, state: []byte("TWIN\x04us"), tracked: []byte{}}}}
	caps := []byte("TCAP\x01caps-table")
	t.Run("bare window snapshot", func(t *testing.T) {
		b := bundle(bundled{win: win})
		if !bytes.Equal(b, win) {
			t.Fatalf("without topics, tracked items and groups the state must stay a bare window snapshot: %q", b)
		}
		got, err := unbundle(b)
		if err != nil || !bytes.Equal(got.win, win) || got.top != nil || got.tracked != nil || got.groups != nil {
			t.Fatalf("unbundle = %+v, %v", got, err)
		}
	})
	t.Run("the oldest version that holds the parts", func(t *testing.T) {
		for _, c := range []struct {
			in   bundled
			want byte
		}{{bundled{win: win, top: top}, bundleV1}, {bundled{win: win, top: top, tracked: tracked}, bundleV2},
			{bundled{win: win, tracked: tracked, groups: groups}, bundleV3}, {bundled{win: win, groups: groups}, bundleV3},
			{bundled{win: win, caps: caps}, bundleV4}, {bundled{win: win, groups: groups, caps: caps}, bundleV4}} {
			if b := bundle(c.in); b[len(bundleMagic)] != c.want {
				t.Errorf("%+v: version %d, want %d: a build without the newer parts must read it", c.in, b[len(bundleMagic)], c.want)
			}
		}
		// Version 1 is byte for byte what every build before salting and groups wrote.
		if b, want := bundle(bundled{win: win, top: top}), append(append([]byte("TBND\x01\x11"), win...), append([]byte{byte(len(top))}, top...)...); !bytes.Equal(b, want) {
			t.Fatalf("%q, want %q", b, want)
		}
	})
	for name, in := range map[string]bundled{
		"topics":                     {win: win, top: top},
		"topics and tracked":         {win: win, top: top, tracked: tracked},
		"tracked":                    {win: win, tracked: tracked},
		"groups":                     {win: win, groups: groups},
		"topics, tracked and groups": {win: win, top: top, tracked: tracked, groups: groups},
		"no group states":            {win: win, groups: &groupsPart{spec: "region=*"}},
		"empty topics":               {win: []byte{}, top: []byte{}},
		"caps":                       {win: win, caps: caps},
		"everything":                 {win: win, top: top, tracked: tracked, groups: groups, caps: caps},
	} {
		t.Run("round trip "+name, func(t *testing.T) {
			got, err := unbundle(bundle(in))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.win, in.win) || !bytes.Equal(got.top, in.top) || (got.top == nil) != (in.top == nil) ||
				!bytes.Equal(got.tracked, in.tracked) || (got.tracked == nil) != (in.tracked == nil) || !reflect.DeepEqual(got.groups, in.groups) ||
				!bytes.Equal(got.caps, in.caps) || (got.caps == nil) != (in.caps == nil) {
				t.Fatalf("unbundle = %+v, want %+v", got, in)
			}
		})
	}
	t.Run("corrupt", func(t *testing.T) {
		good, good2, good3 := bundle(bundled{win: win, top: top}), bundle(bundled{win: win, top: top, tracked: tracked}), bundle(bundled{win: win, top: top, groups: groups})
		for name, b := range map[string][]byte{
			"version":          append([]byte("TBND\x04"), good[5:]...),
			"truncated":        good[:len(good)-1],
			"trailing":         append(append([]byte{}, good...), 0),
			"huge len":         append([]byte("TBND\x01\xff\xff\xff\xff\x0f"), good[6:]...),
			"no parts":         []byte("TBND\x01"),
			"magic only":       []byte("TBND"),
			"v2 truncated":     good2[:len(good2)-1],
			"v2 trailing":      append(append([]byte{}, good2...), 0),
			"v2 unknown flags": bytes.Replace(good2, append(win, 3), append(win, 7), 1),
			"v2 no tracked":    bytes.Replace(good2, append(win, 3), append(win, 1), 1),
			"v3 truncated":     good3[:len(good3)-1],
			"v3 trailing":      append(append([]byte{}, good3...), 0),
			"v3 no groups":     bytes.Replace(good3, append(win, 5), append(win, 1), 1),
			"v3 unknown flags": bytes.Replace(good3, append(win, 5), append(win, 13), 1),
			"v2 with groups":   append([]byte("TBND\x02"), good3[5:]...),
		} {
			if _, err := unbundle(b); !errors.Is(err, errBundle) {
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
	f.Add(bundle(bundled{win: []byte("TWIN\x01a"), top: []byte("TTOP\x01b")}))
	f.Add(bundle(bundled{win: []byte("TWIN\x01a"), tracked: encodeTracked([]window.TrackedItem{{Item: "x", Last: time.Unix(60, 0)}})}))
	f.Add(bundle(bundled{win: []byte("TWIN\x01a"), groups: &groupsPart{spec: "region=eu", winPieces: 1, states: []groupPart{{value: "eu", pieces: 1, state: []byte("s")}}}}))
	f.Add([]byte("TWIN\x01"))
	f.Add([]byte("TBND\x01\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := unbundle(b)
		if err != nil {
			return
		}
		if got.tracked != nil {
			if items, err := decodeTracked(got.tracked); err == nil && !bytes.Equal(encodeTracked(items), got.tracked) && len(items) > 0 {
				// Re-encoding is canonical up to varint form: it must decode to the same items.
				again, err := decodeTracked(encodeTracked(items))
				if err != nil || !reflect.DeepEqual(again, items) {
					t.Fatalf("tracked items %v re-encode to %v (%v)", items, again, err)
				}
			}
		}
		again, err := unbundle(bundle(got))
		if err != nil || !bytes.Equal(again.win, got.win) || !bytes.Equal(again.top, got.top) || (got.top == nil) != (again.top == nil) ||
			!bytes.Equal(again.tracked, got.tracked) || (got.tracked == nil) != (again.tracked == nil) || !reflect.DeepEqual(again.groups, got.groups) {
			t.Fatalf("%q: parts %+v re-bundle to %+v (%v)", b, got, again, err)
		}
	})
}
