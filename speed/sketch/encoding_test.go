package sketch

import (
	"bytes"
	"encoding"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"testing"
)

var (
	_ encoding.BinaryMarshaler   = (*Sketch)(nil)
	_ encoding.BinaryUnmarshaler = (*Sketch)(nil)
	_ encoding.BinaryAppender    = (*Sketch)(nil)
)

// sampleSketches covers the encoder's cases: empty, sparse, dense, huge
// values, conservative, every shape edge.
func sampleSketches(t testing.TB) map[string]*Sketch {
	t.Helper()
	out := map[string]*Sketch{}
	out["empty default"] = mustNew(t, DefaultConfig())
	out["width 1 depth 1"] = func() *Sketch {
		s := mustNew(t, Config{Width: 1, Depth: 1})
		s.AddString("x", 3)
		return s
	}()
	out["sparse"] = func() *Sketch {
		s := mustNew(t, Config{Width: 1 << 12, Depth: 5, Seed: 99})
		for id := range uint64(300) {
			s.Add(keyOf(id), id+1)
		}
		return s
	}()
	out["dense conservative"] = func() *Sketch {
		s := mustNew(t, Config{Width: 64, Depth: 16, Seed: math.MaxUint64, Conservative: true})
		events, _ := zipfStream(8, 1000, 20000)
		for _, id := range events {
			s.Add(keyOf(id), 1)
		}
		return s
	}()
	out["huge counts"] = func() *Sketch {
		s := mustNew(t, Config{Width: 8, Depth: 3})
		s.AddString("a", 1<<62)
		s.AddString("b", 1<<62)
		s.AddString("c", math.MaxUint64-(1<<63)) // total exactly 2^64-1
		return s
	}()
	out["zeros at both ends"] = func() *Sketch {
		s := mustNew(t, Config{Width: 16, Depth: 2})
		s.counters[5], s.total = 1, 1
		s.counters[16+9] = 1
		return s
	}()
	out["full first and last cells"] = func() *Sketch {
		s := mustNew(t, Config{Width: 16, Depth: 2})
		s.counters[0], s.counters[15], s.total = 2, 1, 3
		s.counters[16], s.counters[31] = 1, 2
		return s
	}()
	return out
}

func TestRoundTrip(t *testing.T) {
	for name, s := range sampleSketches(t) {
		t.Run(name, func(t *testing.T) {
			b, err := s.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			var got Sketch
			if err := got.UnmarshalBinary(b); err != nil {
				t.Fatalf("UnmarshalBinary: %v", err)
			}
			if !got.Equal(s) {
				t.Fatal("decoded sketch differs from the original")
			}
			// Same state, same bytes: through a second encode and through
			// AppendBinary onto a prefix.
			b2, _ := got.MarshalBinary()
			if !bytes.Equal(b, b2) {
				t.Fatal("re-encoding gave different bytes")
			}
			prefix := []byte("prefix")
			b3, _ := s.AppendBinary(prefix)
			if !bytes.Equal(b3[:6], prefix) || !bytes.Equal(b3[6:], b) {
				t.Fatal("AppendBinary differs from MarshalBinary")
			}
			// A decoded sketch works: adding to both keeps them equal.
			s2 := s.Clone()
			s2.AddString("after", 1)
			got.AddString("after", 1)
			if !got.Equal(s2) {
				t.Fatal("decoded sketch behaves differently from the original")
			}
		})
	}
}

// TestUnmarshalReusesMemory: restoring into a sketch of the same shape (a
// bucket ring slot) must not allocate the counters again.
func TestUnmarshalReusesMemory(t *testing.T) {
	s := sampleSketches(t)["sparse"]
	b, _ := s.MarshalBinary()
	dst := mustNew(t, s.Config())
	if n := testing.AllocsPerRun(10, func() {
		if err := dst.UnmarshalBinary(b); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Fatalf("UnmarshalBinary into a same-shape sketch: %v allocs, want 0", n)
	}
	if !dst.Equal(s) {
		t.Fatal("decoded sketch differs")
	}
}

// withCRC recomputes the trailing checksum, so a test can reach the checks
// that sit behind it.
func withCRC(b []byte) []byte {
	b = bytes.Clone(b)
	if len(b) >= crcSize {
		binary.LittleEndian.PutUint32(b[len(b)-crcSize:], crc32.Checksum(b[:len(b)-crcSize], castagnol))
	}
	return b
}

// header builds a version-1 header for hand-made bodies.
func header(log2w, depth byte, total uint64) []byte {
	b := append([]byte("CMSK"), 1, 0, log2w, depth)
	b = binary.LittleEndian.AppendUint64(b, 0)
	return binary.LittleEndian.AppendUint64(b, total)
}

func frame(parts ...[]byte) []byte {
	return withCRC(append(bytes.Join(parts, nil), 0, 0, 0, 0))
}

func TestUnmarshalCorrupt(t *testing.T) {
	good, _ := sampleSketches(t)["sparse"].MarshalBinary()
	mutate := func(f func(b []byte) []byte) []byte { return f(bytes.Clone(good)) }
	tests := []struct {
		name string
		in   []byte
	}{
		{"nil", nil},
		{"short", good[:10]},
		{"header only", good[:headerSize]},
		{"bad magic", withCRC(mutate(func(b []byte) []byte { b[0] = 'X'; return b }))},
		{"future version", withCRC(mutate(func(b []byte) []byte { b[4] = 2; return b }))},
		{"unknown flag", withCRC(mutate(func(b []byte) []byte { b[5] = 0x80; return b }))},
		{"bit flip in counters", mutate(func(b []byte) []byte { b[40] ^= 1; return b })},
		{"bit flip in total", mutate(func(b []byte) []byte { b[16] ^= 1; return b })},
		{"bad checksum", mutate(func(b []byte) []byte { b[len(b)-1] ^= 0xff; return b })},
		{"truncated body", withCRC(append(bytes.Clone(good[:len(good)-20]), 0, 0, 0, 0))},
		{"trailing byte", withCRC(append(bytes.Clone(good[:len(good)-4]), 1, 0, 0, 0, 0))},
		{"log2 width 31", frame(header(31, 1, 0), []byte{0, 0})},
		{"grid over MaxBytes", frame(header(27, 2, 0), []byte{0, 0})},
		{"depth 0", frame(header(3, 0, 0), []byte{0, 0})},
		{"depth 17", frame(header(3, 17, 0), []byte{0, 0x87, 0x01})},
		{"too few cells", frame(header(3, 1, 0), []byte{0, 6})},
		{"run past the end", frame(header(3, 1, 0), []byte{0, 8})},
		{"cell past the end", frame(header(3, 1, 1), []byte{0, 7, 1})},
		{"two runs in a row", frame(header(3, 1, 0), []byte{0, 3, 0, 3})},
		{"non-minimal varint", frame(header(3, 1, 1), []byte{0x81, 0x00, 0, 6})},
		{"non-minimal run", frame(header(3, 1, 0), []byte{0, 0x87, 0x00})},
		{"truncated varint", frame(header(3, 1, 1), []byte{0, 6, 0x81})},
		{"varint over 64 bits", frame(header(0, 1, math.MaxUint64), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02})},
		{"row sums past total", frame(header(1, 1, 2), []byte{2, 1})},
		{"row sum overflows", frame(header(1, 1, math.MaxUint64),
			[]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 1})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sampleSketches(t)["dense conservative"]
			before := s.Clone()
			err := s.UnmarshalBinary(tt.in)
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("UnmarshalBinary = %v, want ErrCorrupt", err)
			}
			t.Log(err)
			if !s.Equal(before) {
				t.Fatal("a failed UnmarshalBinary changed the receiver")
			}
		})
	}
	// The hand-made frames above are otherwise valid: a control that the
	// helpers build what the decoder reads.
	var s Sketch
	if err := s.UnmarshalBinary(frame(header(3, 2, 5), []byte{0, 2, 5, 0, 4, 2, 3, 0, 4})); err != nil {
		t.Fatalf("hand-made valid frame: %v", err)
	}
	if s.Total() != 5 || s.counters[3] != 5 || s.counters[9] != 2 || s.counters[10] != 3 {
		t.Fatalf("hand-made frame decoded to %v", s.counters)
	}
}

// TestEncodedSize measures the encoding against the 10.5 MB of dense counters for
// the sketches the speed layer checkpoints (the capacity arithmetic's numbers in
// docs/requirements.md, per partition of 32): a minute bucket of ~62,500 distinct
// videos and ~110,000 views, and an hour of 60 such minutes.
func TestEncodedSize(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an hour of minute sketches")
	}
	cfg := DefaultConfig()
	dense := cfg.Bytes()
	r := rand.New(rand.NewPCG(1, 1))
	z := rand.NewZipf(r, 1.1, 1, 1_000_000-1)
	minute := mustNew(t, cfg)
	hour := mustNew(t, cfg)
	var minuteSize int
	for m := range 60 {
		minute.Reset()
		for range 110_000 {
			minute.Add(keyOf(z.Uint64()), 1)
		}
		if m == 0 {
			b, _ := minute.MarshalBinary()
			minuteSize = len(b)
		}
		if err := hour.Merge(minute); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := hour.MarshalBinary()
	t.Logf("minute sketch (N=110,000): %d bytes = %.1f%% of %d dense", minuteSize, 100*float64(minuteSize)/float64(dense), dense)
	t.Logf("hour sketch   (N=6,600,000): %d bytes = %.1f%% of %d dense", len(b), 100*float64(len(b))/float64(dense), dense)
	if minuteSize > dense/8 {
		t.Errorf("minute sketch encodes to %d bytes, want under 1/8 of dense (%d)", minuteSize, dense/8)
	}
	if len(b) > dense/3 {
		t.Errorf("hour sketch encodes to %d bytes, want under 1/3 of dense (%d)", len(b), dense/3)
	}
}

// TestEncodingGolden pins the worked example of docs/format/sketch.md: a
// change to the layout, the tokens, the checksum or the hash fails here.
func TestEncodingGolden(t *testing.T) {
	s := mustNew(t, Config{Width: 8, Depth: 2})
	s.AddString("V7", 3)
	s.AddString("V2", 2)
	want := []byte{
		0x43, 0x4d, 0x53, 0x4b, 0x01, 0x00, 0x03, 0x02, // "CMSK", v1, flags, log2 w = 3, depth 2
		0, 0, 0, 0, 0, 0, 0, 0, // seed 0
		0x05, 0, 0, 0, 0, 0, 0, 0, // total 5
		0x00, 0x02, 0x03, 0x00, 0x01, 0x02, 0x00, 0x05, 0x02, 0x00, 0x00, 0x03, // counters
		0x63, 0x95, 0x1c, 0x53, // CRC-32C
	}
	got, _ := s.MarshalBinary()
	if !bytes.Equal(got, want) {
		t.Fatalf("encoding\n got % x\nwant % x", got, want)
	}
}

// TestUnmarshalOnePass: a dense sketch decoded into new memory (one pass, no check first)
// decodes to the same cells as into memory of its shape (checked, then decoded), and a
// corruption anywhere in its body fails the one-pass decode with the receiver unchanged.
func TestUnmarshalOnePass(t *testing.T) {
	s := mustNew(t, Config{Width: 1 << 10, Depth: 4, Seed: 3})
	for i := range 20000 {
		s.AddString(fmt.Sprint("k", i%3000), uint64(1+i%200))
	}
	b, err := s.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if cells := 1 << 10 * 4; cells > (len(b)-headerSize-crcSize)*maxCellsPerByte {
		t.Fatalf("the sample is too sparse for the one-pass path (%d bytes)", len(b))
	}
	var fresh Sketch
	if err := fresh.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	reused := mustNew(t, s.Config())
	if err := reused.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	if !fresh.Equal(s) || !reused.Equal(s) {
		t.Fatal("decoded sketch differs from the encoded one")
	}
	r := rand.New(rand.NewPCG(4, 5))
	for range 300 {
		bad := bytes.Clone(b)
		at := headerSize + r.IntN(len(b)-headerSize-crcSize)
		bad[at] ^= byte(1 + r.IntN(255))
		bad = withCRC(bad)
		other := mustNew(t, Config{Width: 8, Depth: 2})
		other.AddString("before", 3)
		before := other.Clone()
		if err := other.UnmarshalBinary(bad); err == nil {
			if again, _ := other.MarshalBinary(); !bytes.Equal(again, bad) {
				t.Fatalf("byte %d changed: accepted input does not re-encode to itself", at)
			}
			continue // a change that is still a valid sketch (a cell's count)
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("byte %d changed: %v does not wrap ErrCorrupt", at, err)
		}
		if !other.Equal(before) {
			t.Fatalf("byte %d changed: a failed UnmarshalBinary changed the receiver", at)
		}
	}
}
