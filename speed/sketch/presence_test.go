package sketch

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
)

// TestPresenceAgreesWithEstimate: a presence answers, for every key, exactly whether the
// sketch's estimate was above its threshold, and survives its encoding.
func TestPresenceAgreesWithEstimate(t *testing.T) {
	s, err := New(Config{Width: 256, Depth: 4, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3000 {
		s.AddString(fmt.Sprint("k", i%700), uint64(1+i%5))
	}
	for _, th := range []uint64{0, 10, 40, 1 << 40} {
		p := s.Presence(th)
		enc := p.AppendBinary(nil)
		q, rest, err := DecodePresence(append(enc, 9), 256*4)
		if err != nil || !bytes.Equal(rest, []byte{9}) {
			t.Fatalf("decode: %v, rest %v", err, rest)
		}
		if !bytes.Equal(q.AppendBinary(nil), enc) {
			t.Fatal("re-encoding differs")
		}
		in := 0
		for i := range 1000 {
			h := s.HashString(fmt.Sprint("k", i))
			want := s.EstimateHash(h) > th
			if p.ContainsHash(h) != want || q.ContainsHash(h) != want {
				t.Fatalf("threshold %d key k%d: presence %v, estimate %d", th, i, p.ContainsHash(h), s.EstimateHash(h))
			}
			if want {
				in++
			}
		}
		t.Logf("threshold %d: %d of 1000 keys above, %d bytes encoded", th, in, len(enc))
	}
	if _, _, err := DecodePresence(s.Presence(0).AppendBinary(nil), 256*4-1); !errors.Is(err, ErrCorrupt) {
		t.Errorf("decode over maxCells: %v, want ErrCorrupt", err)
	}
	for _, bad := range [][]byte{nil, {0}, {3, 1}, {0x80, 2, 4, 1, 0}} {
		if _, _, err := DecodePresence(bad, 1<<20); !errors.Is(err, ErrCorrupt) {
			t.Errorf("decode %v: %v, want ErrCorrupt", bad, err)
		}
	}
}
