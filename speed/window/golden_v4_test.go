package window

import (
	"bytes"
	"encoding/binary"
	"os"
	"testing"
	"time"
)

// goldenIncConfig and goldenIncStream are what testdata/incremental-v4.bin was written
// under: the default windows with small sketches, a stream with late and too-late events.
func goldenIncConfig() Config {
	c := DefaultConfig()
	c.Sketch.Width, c.Sketch.Depth = 1<<8, 3
	return c
}

func goldenIncStream() streamOpts {
	return streamOpts{seed: 31, n: 1500, items: 40, step: 20 * time.Second, counts: 3, late: true}
}

// writeGolden lays out a checkpoint's state and pieces: uv(len) state, uv(n), n x (uv(len)
// piece bytes); the pieces' names are their hashes.
func writeGolden(state []byte, pieces []Piece) []byte {
	b := binary.AppendUvarint(nil, uint64(len(state)))
	b = append(b, state...)
	b = binary.AppendUvarint(b, uint64(len(pieces)))
	for _, pc := range pieces {
		b = binary.AppendUvarint(b, uint64(len(pc.Data)))
		b = append(b, pc.Data...)
	}
	return b
}

func readGolden(t *testing.T, b []byte) (state []byte, pieces []Piece) {
	t.Helper()
	d := &decoder{b: b}
	state = d.raw(d.count(1))
	n := d.count(1)
	for range n {
		data := d.raw(d.count(1))
		pieces = append(pieces, Piece{Name: pieceName(data), Data: data})
	}
	if d.err != nil || d.off != len(b) {
		t.Fatalf("golden file: %v", d.err)
	}
	return state, pieces
}

// TestRestoreIncrementalV4Golden: testdata/incremental-v4.bin is the second of two
// incremental checkpoints (after events 750 and 1500 of goldenIncStream) written by the
// build before version 5 (an item table naming items by string only). This build restores
// it to the state of a partition fed the same stream.
func TestRestoreIncrementalV4Golden(t *testing.T) {
	b, err := os.ReadFile("testdata/incremental-v4.bin")
	if err != nil {
		t.Fatal(err)
	}
	state, pieces := readGolden(t, b)
	if state[len(snapMagic)] != 4 {
		t.Fatalf("golden state is version %d, want 4", state[len(snapMagic)])
	}
	cfg := goldenIncConfig()
	got, err := RestoreIncremental(cfg, state, pieces)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, got)
	p, _ := New(cfg)
	for _, ev := range genStream(goldenIncStream()) {
		p.Add(ev)
	}
	if !bytes.Equal(mustMarshal(t, got), mustMarshal(t, p)) {
		t.Fatal("the version-4 checkpoint restores to another state than the stream's")
	}
}
