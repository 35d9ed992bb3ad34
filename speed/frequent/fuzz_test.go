package frequent

import (
	"encoding/binary"
	"hash/crc32"
	"testing"
)

func castagnolAppend(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(body, crc32.Checksum(body, castagnol))
}

// FuzzUnmarshal: no input panics; whatever decodes re-encodes to the same
// bytes and holds the invariant the bound rests on.
func FuzzUnmarshal(f *testing.F) {
	s := mustNew(f, 2)
	for _, k := range []string{"b", "a", "c", "d", "e"} {
		s.AddString(k, uint64(len(k)*3))
	}
	good, _ := s.MarshalBinary()
	f.Add(good)
	empty, _ := mustNew(f, 1).MarshalBinary()
	f.Add(empty)
	f.Fuzz(func(t *testing.T, data []byte) {
		// Give mutated bodies a valid checksum half the time, so the fuzzer
		// gets past the CRC into the entries.
		for _, in := range [][]byte{data, fixCRC(data)} {
			var d Summary
			if err := d.UnmarshalBinary(in); err != nil {
				continue
			}
			out, err := d.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if string(out) != string(in) {
				t.Fatalf("decode then encode changed the bytes")
			}
			var c uint64
			for _, v := range d.vals {
				c += v
			}
			if d.offset*uint64(d.m+1)+c > d.total {
				t.Fatalf("decoded a summary that breaks D*(m+1) <= N-C")
			}
			d.AddString("x", 1)
			d.Compact()
		}
	})
}

func fixCRC(data []byte) []byte {
	if len(data) < 4 {
		return data
	}
	return castagnolAppend(append([]byte{}, data[:len(data)-4]...))
}
