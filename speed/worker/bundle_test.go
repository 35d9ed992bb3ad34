package worker

import (
	"bytes"
	"errors"
	"reflect"
	"testing"
)

func TestBundle(t *testing.T) {
	win, top := []byte("TWIN\x01window-state"), []byte("TTOP\x01topics-state")
	groups := &groupsPart{spec: "region=eu,us", closed: true, winPieces: 3, states: []groupPart{
		{value: "eu", pieces: 2, state: []byte("TWIN\x04eu")}, {value: "us", pieces: 0, state: []byte("TWIN\x04us")}}}
	t.Run("bare window snapshot", func(t *testing.T) {
		b := bundle(bundled{win: win})
		if !bytes.Equal(b, win) {
			t.Fatalf("without topics and groups the state must stay a bare window snapshot: %q", b)
		}
		got, err := unbundle(b)
		if err != nil || !bytes.Equal(got.win, win) || got.top != nil || got.groups != nil {
			t.Fatalf("unbundle = %+v, %v", got, err)
		}
	})
	t.Run("topics alone is version 1", func(t *testing.T) {
		b := bundle(bundled{win: win, top: top})
		if want := append(append([]byte("TBND\x01\x11"), win...), append([]byte{byte(len(top))}, top...)...); !bytes.Equal(b, want) {
			t.Fatalf("%q, want the version 1 layout %q", b, want)
		}
	})
	for name, in := range map[string]bundled{
		"topics":             {win: win, top: top},
		"groups":             {win: win, groups: groups},
		"topics and groups":  {win: win, top: top, groups: groups},
		"no group states":    {win: win, groups: &groupsPart{spec: "region=*"}},
		"empty topics":       {win: []byte{}, top: []byte{}},
		"empty group states": {win: win, top: []byte{}, groups: &groupsPart{states: []groupPart{{value: "x", state: []byte{}}}}},
	} {
		t.Run("round trip "+name, func(t *testing.T) {
			got, err := unbundle(bundle(in))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.win, in.win) || !bytes.Equal(got.top, in.top) || (got.top == nil) != (in.top == nil) || !reflect.DeepEqual(got.groups, in.groups) {
				t.Fatalf("unbundle = %+v, want %+v", got, in)
			}
		})
	}
	t.Run("corrupt", func(t *testing.T) {
		good := bundle(bundled{win: win, top: top})
		good2 := bundle(bundled{win: win, top: top, groups: groups})
		for name, b := range map[string][]byte{
			"version":          append([]byte("TBND\x03"), good[5:]...),
			"truncated":        good[:len(good)-1],
			"trailing":         append(append([]byte{}, good...), 0),
			"huge len":         append([]byte("TBND\x01\xff\xff\xff\xff\x0f"), good[6:]...),
			"no parts":         []byte("TBND\x01"),
			"magic only":       []byte("TBND"),
			"v2 truncated":     good2[:len(good2)-1],
			"v2 trailing":      append(append([]byte{}, good2...), 0),
			"v2 no flags":      []byte("TBND\x02"),
			"v2 unknown flag":  append([]byte("TBND\x02\x07"), good2[6:]...),
			"v2 without group": append([]byte("TBND\x02\x01"), good2[6:]...),
			"v2 huge count":    append(bytes.Clone(good2[:len(good2)-len(groups.states[0].state)-30]), 0xff, 0xff, 0xff, 0x0f),
		} {
			if _, err := unbundle(b); !errors.Is(err, errBundle) {
				t.Errorf("%s: %v, want errBundle", name, err)
			}
		}
	})
}

// FuzzUnbundle: no input panics, and whatever unbundles re-bundles to a state that unbundles
// to the same parts (not always the same bytes: a length may be a non-minimal varint).
func FuzzUnbundle(f *testing.F) {
	f.Add(bundle(bundled{win: []byte("TWIN\x01a"), top: []byte("TTOP\x01b")}))
	f.Add(bundle(bundled{win: []byte("TWIN\x01a"), groups: &groupsPart{spec: "region=eu", winPieces: 1, states: []groupPart{{value: "eu", pieces: 1, state: []byte("s")}}}}))
	f.Add([]byte("TWIN\x01"))
	f.Add([]byte("TBND\x01\x00\x00"))
	f.Add([]byte("TBND\x02\x02\x00\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := unbundle(b)
		if err != nil {
			return
		}
		again, err := unbundle(bundle(got))
		if err != nil || !bytes.Equal(again.win, got.win) || !bytes.Equal(again.top, got.top) || (got.top == nil) != (again.top == nil) || !reflect.DeepEqual(again.groups, got.groups) {
			t.Fatalf("%q: parts %+v re-bundle to %+v (%v)", b, got, again, err)
		}
	})
}
