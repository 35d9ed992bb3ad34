package sketch

import (
	"bytes"
	"errors"
	"testing"
)

// FuzzUnmarshal feeds arbitrary bytes to UnmarshalBinary. It must never
// panic; every failure must wrap ErrCorrupt and leave the receiver alone; and
// because the encoding is canonical, anything it accepts must re-encode to
// the very same bytes. With fixCRC the fuzzer's bytes get a valid checksum
// first, so mutations reach the header and counter checks behind it instead
// of all dying at the CRC.
func FuzzUnmarshal(f *testing.F) {
	for name, s := range sampleSketches(f) {
		if s.Config().Bytes() > 1<<20 {
			continue // keep the corpus fast to run
		}
		b, err := s.MarshalBinary()
		if err != nil {
			f.Fatalf("%s: %v", name, err)
		}
		f.Add(b, false)
		f.Add(b, true)
	}
	f.Add(frame(header(3, 2, 5), []byte{0, 2, 5, 0, 4, 2, 3, 0, 4}), false)
	f.Add([]byte("CMSK"), true)
	f.Add([]byte{}, false)

	f.Fuzz(func(t *testing.T, data []byte, fixCRC bool) {
		if fixCRC {
			data = withCRC(data)
		}
		// A valid header may ask for up to MaxBytes (1 GiB) of counters, which
		// the decoder rightly allocates once the body checks out; keep the
		// fuzzer fast by skipping shapes over 1 MiB.
		if len(data) >= 8 && data[6] < 64 && (uint64(1)<<data[6])*uint64(data[7])*8 > 1<<20 {
			return
		}
		s := mustNew(t, Config{Width: 8, Depth: 2})
		s.AddString("before", 3)
		before := s.Clone()
		if err := s.UnmarshalBinary(data); err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			if !s.Equal(before) {
				t.Fatal("a failed UnmarshalBinary changed the receiver")
			}
			return
		}
		again, err := s.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, data) {
			t.Fatalf("accepted input does not re-encode to itself:\n in  %x\n out %x", data, again)
		}
		// The decoded state keeps the invariants the operations rely on.
		c := s.Clone()
		if err := c.Merge(s); err == nil {
			if err := c.Subtract(s); err != nil && !errors.Is(err, ErrConservativeSubtract) {
				t.Fatalf("Subtract after Merge of a decoded sketch: %v", err)
			}
		}
		_ = s.EstimateString("x")
	})
}
