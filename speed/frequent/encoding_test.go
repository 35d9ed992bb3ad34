package frequent

import (
	"encoding/hex"
	"errors"
	"math/rand/v2"
	"testing"
)

// TestEncodingGolden pins the version-1 bytes of docs/format/frequent.md's
// worked example: capacity 2, add b x10, a x10, c x3, d x1, e x7.
func TestEncodingGolden(t *testing.T) {
	s := mustNew(t, 2)
	s.AddString("b", 10)
	s.AddString("a", 10)
	s.AddString("c", 3)
	s.AddString("d", 1)
	s.AddString("e", 7)
	got, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	const want = "46514d47" + "01" + "00" + "0000" + "02000000" +
		"1f00000000000000" + "0700000000000000" +
		"02" + "01" + "61" + "03" + "01" + "62" + "03"
	if hex.EncodeToString(got[:len(got)-4]) != want {
		t.Fatalf("encoding\n got %x\nwant %s", got[:len(got)-4], want)
	}
	if hex.EncodeToString(got[len(got)-4:]) != goldenCRC {
		t.Fatalf("crc %x, want %s", got[len(got)-4:], goldenCRC)
	}
}

const goldenCRC = "d04e9a3a"

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, m := range []int{1, 7, 100} {
		keys, counts, _ := zipfStream(r, 5000, 3000, 1.1, 9)
		s := mustNew(t, m)
		for i, k := range keys {
			s.AddString(k, counts[i])
		}
		for _, compact := range []bool{false, true} {
			if compact {
				s.Compact()
			}
			b, err := s.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var d Summary
			if err := d.UnmarshalBinary(b); err != nil {
				t.Fatal(err)
			}
			if !d.Equal(s) {
				t.Fatalf("m=%d: decoded summary differs", m)
			}
			b2, _ := d.MarshalBinary()
			if string(b2) != string(b) {
				t.Fatalf("m=%d: re-encoding differs", m)
			}
			// The decoded summary keeps working: add and merge.
			d.AddString("new", 1)
			if err := d.Merge(s); err != nil {
				t.Fatal(err)
			}
		}
	}
	empty := mustNew(t, 3)
	b, _ := empty.MarshalBinary()
	var d Summary
	if err := d.UnmarshalBinary(b); err != nil || !d.Equal(empty) {
		t.Fatalf("empty summary: %v", err)
	}
}

func TestDecodeRejects(t *testing.T) {
	s := mustNew(t, 2)
	s.AddString("a", 5)
	s.AddString("b", 3)
	good, _ := s.MarshalBinary()
	resum := func(b []byte) []byte {
		body := b[:len(b)-4]
		out := append([]byte{}, body...)
		return castagnolAppend(out)
	}
	for _, tc := range []struct {
		name string
		mod  func([]byte) []byte
	}{
		{"short", func(b []byte) []byte { return b[:10] }},
		{"magic", func(b []byte) []byte { b[0] = 'X'; return resum(b) }},
		{"version", func(b []byte) []byte { b[4] = 2; return resum(b) }},
		{"crc", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"flags", func(b []byte) []byte { b[5] = 1; return resum(b) }},
		{"capacity 0", func(b []byte) []byte { b[8] = 0; return resum(b) }},
		{"offset over total", func(b []byte) []byte { b[20] = 3; return resum(b) }},
		{"counter over total", func(b []byte) []byte { b[12] = 7; return resum(b) }},
		{"order", func(b []byte) []byte { b[30], b[33] = 'b', 'a'; return resum(b) }},
		{"trailing", func(b []byte) []byte { return resum(append(b[:len(b)-4:len(b)-4], 0, 0, 0, 0, 0)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mod(append([]byte{}, good...))
			d := mustNew(t, 9)
			d.AddString("keep", 1)
			if err := d.UnmarshalBinary(b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("err = %v, want ErrCorrupt", err)
			}
			if d.Capacity() != 9 || d.Lower("keep") != 1 {
				t.Fatal("a failed decode changed the receiver")
			}
		})
	}
}
