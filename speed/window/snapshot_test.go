package window

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"reflect"
	"testing"
	"time"

	trmodel "trending/model"
	"trending/model/event"
	"trending/model/windowset"
	"trending/speed/sketch"
)

// snapTestConfig mixes every window kind and mode, with small sketches.
func snapTestConfig() Config {
	cfg := exactTestConfig()
	cfg.Windows = append(cfg.Windows,
		WindowConfig{Name: "sk-hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Sketch},
		WindowConfig{Name: "sk-month", Kind: windowset.Sliding, Length: 30 * 24 * time.Hour, Bucket: 24 * time.Hour, Mode: windowset.Sketch},
		WindowConfig{Name: "sk-calendar-day", Kind: windowset.Calendar, Span: trmodel.Day, Mode: windowset.Sketch},
	)
	cfg.Sketch = sketch.Config{Width: 1 << 8, Depth: 3, Seed: 42, Conservative: true}
	cfg.CandidateCap = 12
	return cfg
}

// snapAllConfig is snapTestConfig plus an all-time window of each mode.
// With them nothing is TooLate, so the property tests run both configs.
func snapAllConfig() Config {
	cfg := snapTestConfig()
	cfg.Windows = append(cfg.Windows,
		WindowConfig{Name: "all", Kind: windowset.AllTime, Mode: windowset.Sketch},
		WindowConfig{Name: "all-exact", Kind: windowset.AllTime, Mode: windowset.Exact},
	)
	return cfg
}

func mustMarshal(t testing.TB, p *Partition) []byte {
	t.Helper()
	b, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func allTops(t testing.TB, p *Partition) map[string]List {
	t.Helper()
	out := map[string]List{}
	for _, wc := range p.cfg.Windows {
		l, err := p.Top(wc.Name)
		if err != nil {
			t.Fatal(err)
		}
		out[wc.Name] = l
	}
	return out
}

// TestSnapshotReplayProperty: for seeded random streams with late and
// too-late events over more than a day, snapshot at a random point, restore,
// replay the rest: the bytes, the lists, the closed lists and the outcomes
// equal those of one uninterrupted run.
func TestSnapshotReplayProperty(t *testing.T) {
	for _, cc := range []struct {
		name string
		cfg  func() Config
	}{{"windows", snapTestConfig}, {"with-all-time", snapAllConfig}, {"with-decayed", decayedTestConfig}, {"with-frequent", freqTestConfig}} {
		for seed := uint64(1); seed <= 12; seed++ {
			t.Run(fmt.Sprintf("%s/%d", cc.name, seed), func(t *testing.T) { snapshotReplay(t, cc.cfg(), seed) })
		}
	}
}

func snapshotReplay(t *testing.T, cfg Config, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 7))
	evs := genStream(streamOpts{seed: seed, n: 3000 + r.IntN(3000), items: 20 + r.IntN(200), step: time.Duration(5+r.IntN(40)) * time.Second, counts: 1 + r.IntN(5), late: true})
	cut := r.IntN(len(evs) + 1)

	whole, _ := New(cfg)
	var wholeOut []Outcome
	var wholeClosed []List
	for _, ev := range evs {
		wholeOut = append(wholeOut, whole.Add(ev))
		wholeClosed = append(wholeClosed, whole.TakeClosed()...)
	}

	first, _ := New(cfg)
	var out []Outcome
	var closed []List
	for _, ev := range evs[:cut] {
		out = append(out, first.Add(ev))
		closed = append(closed, first.TakeClosed()...)
	}
	// Leave some closed lists unclaimed in the snapshot.
	if r.IntN(2) == 0 {
		closed = append(closed, first.TakeClosed()...)
	}
	snap := mustMarshal(t, first)
	second, err := Restore(cfg, snap)
	if err != nil {
		t.Fatalf("restore at event %d: %v", cut, err)
	}
	if again := mustMarshal(t, second); !bytes.Equal(again, snap) {
		t.Fatalf("restore then marshal changed the snapshot (%d vs %d bytes)", len(again), len(snap))
	}
	checkInvariants(t, second)
	if !reflect.DeepEqual(allTops(t, first), allTops(t, second)) {
		t.Fatal("lists differ right after restore")
	}
	for _, ev := range evs[cut:] {
		out = append(out, second.Add(ev))
		closed = append(closed, second.TakeClosed()...)
	}
	if !reflect.DeepEqual(out, wholeOut) {
		t.Fatal("outcomes differ")
	}
	if a, b := mustMarshal(t, second), mustMarshal(t, whole); !bytes.Equal(a, b) {
		t.Fatalf("snapshot after replay differs from the uninterrupted run (%d vs %d bytes)", len(a), len(b))
	}
	if !reflect.DeepEqual(allTops(t, second), allTops(t, whole)) {
		t.Fatal("lists differ from the uninterrupted run")
	}
	if !reflect.DeepEqual(closed, wholeClosed) {
		t.Fatalf("closed lists differ: %d vs %d", len(closed), len(wholeClosed))
	}
	checkInvariants(t, second)
	// Bytes and Sketches count spare pooled sketches and slice
	// capacity, and Entries counts a late event's side entry
	// separately until a restore merges it: physical measures a
	// restore does not reproduce.
	sa, sb := second.Stats(), whole.Stats()
	sa.Bytes, sa.Sketches, sa.Entries, sb.Bytes, sb.Sketches, sb.Entries = 0, 0, 0, 0, 0, 0
	if sa != sb {
		t.Fatalf("stats differ:\n%+v\n%+v", second.Stats(), whole.Stats())
	}
}

// TestSnapshotDeterministic: two partitions that reach the same state by
// different paths (different handle assignments, map orders) encode to the
// same bytes.
func TestSnapshotDeterministic(t *testing.T) {
	cfg := snapTestConfig()
	evs := genStream(streamOpts{seed: 11, n: 2000, items: 50, step: 10 * time.Second, counts: 3})
	a, _ := New(cfg)
	for _, ev := range evs {
		a.Add(ev)
	}
	// b first sees a burst of other items that all expire, so its handles
	// differ from a's; then the same stream.
	b, _ := New(cfg)
	for i := range 500 {
		b.Add(event.Event{ItemID: fmt.Sprintf("noise%d", i), Count: 1, TS: t0.Add(-40 * 24 * time.Hour)})
	}
	b.AdvanceTo(t0.Add(-2 * time.Minute))
	b.TakeClosed()
	// Zero b's counters and closed lists the noise produced; the window
	// state itself has expired.
	b.st = Stats{}
	for _, ev := range evs {
		b.Add(ev)
	}
	a.TakeClosed()
	b.TakeClosed()
	if !bytes.Equal(mustMarshal(t, a), mustMarshal(t, b)) {
		t.Fatal("same state, different bytes")
	}
}

func TestRestoreEmptyAndDefault(t *testing.T) {
	for _, cfg := range []Config{DefaultConfig(), snapTestConfig(), snapAllConfig()} {
		p, _ := New(cfg)
		b := mustMarshal(t, p)
		q, err := Restore(cfg, b)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(mustMarshal(t, q), b) {
			t.Fatal("empty snapshot does not round-trip")
		}
	}
}

func TestRestoreCorruptChecksum(t *testing.T) {
	cfg := snapTestConfig()
	p, _ := New(cfg)
	for _, ev := range genStream(streamOpts{seed: 3, n: 500, items: 30, step: 10 * time.Second, counts: 2}) {
		p.Add(ev)
	}
	good := mustMarshal(t, p)
	for _, tc := range []struct {
		name string
		mod  func([]byte) []byte
	}{
		{"flipped bit in state", func(b []byte) []byte { b[len(b)/2] ^= 0x10; return b }},
		{"flipped bit in checksum", func(b []byte) []byte { b[len(b)-1] ^= 1; return b }},
		{"truncated", func(b []byte) []byte { return b[:len(b)-9] }},
		{"empty", func([]byte) []byte { return nil }},
		{"bad magic", func(b []byte) []byte { b[0] = 'X'; return b }},
		{"future version", func(b []byte) []byte { b[4] = 9; return reseal(b) }},
		{"trailing byte, resealed", func(b []byte) []byte { return reseal(append(b[:len(b)-4:len(b)-4], 0, 0, 0, 0, 0)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.mod(bytes.Clone(good))
			if _, err := Restore(cfg, b); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("Restore: %v, want ErrCorrupt", err)
			}
		})
	}
}

// reseal recomputes the checksum of b (its last 4 bytes), so that a test can
// reach the checks behind it.
func reseal(b []byte) []byte {
	body := b[:len(b)-4]
	return binary.LittleEndian.AppendUint32(body[:len(body):len(body)], crc32.Checksum(body, castagnoli))
}

func TestRestoreConfigMismatch(t *testing.T) {
	cfg := snapTestConfig()
	p, _ := New(cfg)
	for _, ev := range genStream(streamOpts{seed: 4, n: 200, items: 10, step: 10 * time.Second, counts: 2}) {
		p.Add(ev)
	}
	b := mustMarshal(t, p)
	for _, tc := range []struct {
		name string
		mod  func(c *Config)
		ok   bool
	}{
		{"window length", func(c *Config) { c.Windows[1].Length = 2 * time.Hour }, false},
		{"window renamed", func(c *Config) { c.Windows[0].Name = "ten" }, false},
		{"window mode", func(c *Config) { c.Windows[0].Mode = windowset.Sketch }, false},
		{"window dropped", func(c *Config) { c.Windows = c.Windows[1:] }, false},
		{"sketch width", func(c *Config) { c.Sketch.Width = 1 << 9 }, false},
		{"sketch seed", func(c *Config) { c.Sketch.Seed = 1 }, false},
		// Upgrading to a config with an all-time window must not restore
		// an empty one next to months of other state: the worker skips the
		// checkpoint and replays the log, which rebuilds all of it.
		{"all-time window added", func(c *Config) { c.Windows = append(c.Windows, WindowConfig{Name: "all", Kind: windowset.AllTime}) }, false},
		{"K and M may change", func(c *Config) { c.K, c.M = 5, 1 }, true},
		{"lateness may change", func(c *Config) { c.AllowedLateness = 5 * time.Minute }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := snapTestConfig()
			tc.mod(&c)
			_, err := Restore(c, b)
			if tc.ok && err != nil {
				t.Fatalf("Restore: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrConfigMismatch) {
				t.Fatalf("Restore: %v, want ErrConfigMismatch", err)
			}
		})
	}
}

// TestRestoreShorterLateness: a restart with a shorter allowed lateness
// closes the minutes the new watermark has passed, as a live partition with
// that lateness would have.
func TestRestoreShorterLateness(t *testing.T) {
	cfg := exactTestConfig()
	cfg.AllowedLateness = 5 * time.Minute
	p, _ := New(cfg)
	p.Add(event.Event{ItemID: "a", Count: 1, TS: t0})
	p.Add(event.Event{ItemID: "b", Count: 1, TS: t0.Add(4 * time.Minute)})
	if l, _ := p.Top("hour"); l.Total != 0 {
		t.Fatalf("hour total %d before restart, want 0", l.Total)
	}
	cfg.AllowedLateness = time.Minute
	q, err := Restore(cfg, mustMarshal(t, p))
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := q.Top("hour"); l.Total != 1 || !q.AsOf().Equal(t0.Add(3*time.Minute)) {
		t.Fatalf("after restart: hour total %d as of %v, want 1 as of %v", l.Total, q.AsOf(), t0.Add(3*time.Minute))
	}
	checkInvariants(t, q)
}

// FuzzRestore: Restore never panics, and whatever it accepts re-encodes to
// the same bytes (the format has one encoding per state) and keeps the
// partition's invariants through more events.
func FuzzRestore(f *testing.F) {
	cfg := snapAllConfig()
	p, _ := New(cfg)
	f.Add(mustMarshal(f, p))
	for i, n := range []int{1, 30, 400} {
		p, _ := New(cfg)
		for _, ev := range genStream(streamOpts{seed: uint64(i + 1), n: n, items: 8, step: time.Minute, counts: 2, late: true}) {
			p.Add(ev)
		}
		f.Add(mustMarshal(f, p))
	}
	// Version 2: with counts since a boundary (the fuzzed config keeps none: they are read
	// and let go).
	sc := cfg
	sc.SinceDays = 3
	for i, n := range []int{0, 30, 400} {
		p, _ := New(sc)
		if i == 1 {
			_ = p.SetBoundary(t0.Truncate(24 * time.Hour))
		}
		for _, ev := range genStream(streamOpts{seed: uint64(i + 7), n: n, items: 8, step: time.Minute, counts: 2, late: true}) {
			p.Add(ev)
		}
		f.Add(mustMarshal(f, p))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Half the time fix the checksum, so mutations reach the decoder.
		if len(b) > 8 && b[len(b)-1]&1 == 0 {
			b = reseal(bytes.Clone(b))
		}
		q, err := Restore(cfg, b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrConfigMismatch) {
				t.Fatalf("error wraps neither sentinel: %v", err)
			}
			return
		}
		checkInvariants(t, q)
		checkCanonical(t, cfg, b)
		for _, ev := range genStream(streamOpts{seed: 1, n: 50, items: 8, step: time.Hour, counts: 2, late: true}) {
			q.Add(ev)
		}
		allTops(t, q)
		checkInvariants(t, q)
	})
}

// TestRestoreEveryByteFlip flips every byte of a small snapshot in a few
// ways, with the checksum fixed so the decoder sees the damage: Restore must
// reject it as corrupt (or a config mismatch) or accept a state that
// re-encodes to exactly those bytes. The deterministic companion of
// FuzzRestore.
func TestRestoreEveryByteFlip(t *testing.T) {
	for _, cc := range []struct {
		name string
		cfg  func() Config
	}{{"with-all-time", snapAllConfig}, {"with-decayed", decayedTestConfig}, {"with-frequent", freqTestConfig}} {
		t.Run(cc.name, func(t *testing.T) { restoreEveryByteFlip(t, cc.cfg()) })
	}
}

func restoreEveryByteFlip(t *testing.T, cfg Config) {
	cfg.Sketch.Width = 1 << 4 // small sketches keep the snapshot short
	p, _ := New(cfg)
	for _, ev := range genStream(streamOpts{seed: 8, n: 60, items: 6, step: 30 * time.Minute, counts: 2, late: true}) {
		p.Add(ev)
	}
	good := mustMarshal(t, p)
	accepted := 0
	for i := range len(good) - 4 {
		for _, x := range []byte{0x01, 0x80, 0xff} {
			b := bytes.Clone(good)
			b[i] ^= x
			b = reseal(b)
			q, err := Restore(cfg, b)
			if err != nil {
				if !errors.Is(err, ErrCorrupt) && !errors.Is(err, ErrConfigMismatch) {
					t.Fatalf("byte %d ^ %#x: %v", i, x, err)
				}
				continue
			}
			accepted++
			checkInvariants(t, q)
			checkCanonical(t, cfg, b)
		}
	}
	t.Logf("%d bytes, %d flips accepted as other valid states", len(good), accepted)
}

// checkCanonical checks that an accepted snapshot re-encodes to the same
// bytes when restored under the lateness it records (a different lateness
// is a legitimate config change that moves the watermark).
func checkCanonical(t *testing.T, cfg Config, b []byte) {
	t.Helper()
	d := &decoder{b: b, off: len(snapMagic) + 1}
	d.str()
	d.byte1()
	d.sv()
	d.sv()
	late := d.uv()
	if d.err != nil {
		t.Fatalf("accepted snapshot has no lateness: %v", d.err)
	}
	cfg.AllowedLateness = time.Duration(late) * time.Millisecond
	if b[len(snapMagic)] == snapVersion {
		// Version 3 records whether the partition kept counts since the boundary and the
		// SinceDays it was written under (at the end); under other settings Restore converts
		// it. One of them (0: none kept) must give the bytes back.
		for days := 0; days <= MaxSinceDays; days++ {
			cfg.SinceDays = days
			if q, err := Restore(cfg, b); err == nil && bytes.Equal(mustMarshal(t, q), b) {
				return
			}
		}
		t.Fatalf("accepted a non-canonical version-3 snapshot")
	}
	cfg.SinceDays = 0
	q, err := Restore(cfg, b)
	if err != nil {
		t.Fatalf("restore under the recorded lateness %d ms: %v", late, err)
	}
	if !bytes.Equal(mustMarshal(t, q), b) {
		t.Fatalf("accepted a non-canonical snapshot")
	}
}

// TestRestoreVersion1Golden: testdata/snapshot-v1.bin was written by the
// build before all-time windows existed (snapTestConfig with 16-column
// sketches, genStream seed 21, 400 events, 5-minute steps). This build
// reads it under the same config and re-encodes it as version 3: the same
// bytes with the version byte 3, an empty late-drop section (version 1
// kept none, so the counts start at zero) and no counts since a boundary:
// the format of the existing window kinds did not change. Under a config that adds an all-time window
// it is refused with ErrConfigMismatch.
func TestRestoreVersion1Golden(t *testing.T) {
	b, err := os.ReadFile("testdata/snapshot-v1.bin")
	if err != nil {
		t.Fatal(err)
	}
	cfg := snapTestConfig()
	cfg.Sketch.Width = 1 << 4
	p, err := Restore(cfg, b)
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	checkInvariants(t, p)
	want := append([]byte(nil), b[:len(b)-crcLen]...)
	want[len(snapMagic)] = snapVersion
	want = append(want, 0, 0) // no late-drop counts, no counts since a boundary
	want = binary.LittleEndian.AppendUint32(want, crc32.Checksum(want, castagnoli))
	if !bytes.Equal(mustMarshal(t, p), want) {
		t.Fatal("a version-1 snapshot re-encodes to other bytes than version 3 with no late-drop counts and no counts since a boundary")
	}
	if len(p.late) != 0 {
		t.Fatalf("late-drop counts from a version-1 snapshot: %v", p.late)
	}
	if s := p.Stats(); s.Counted != 380 || s.Late != 17 || s.TooLate != 3 || s.Items != 12 {
		t.Fatalf("stats %+v", s)
	}
	for _, ev := range genStream(streamOpts{seed: 22, n: 200, items: 12, step: 5 * time.Minute, counts: 3, late: true}) {
		p.Add(ev)
	}
	checkInvariants(t, p)
	cfg.Windows = append(cfg.Windows, WindowConfig{Name: "all", Kind: windowset.AllTime})
	if _, err := Restore(cfg, b); !errors.Is(err, ErrConfigMismatch) {
		t.Fatalf("Restore with an all-time window added: %v, want ErrConfigMismatch", err)
	}
}

// TestSnapshotSketchAllWithoutExactAll: a whole snapshot of exact windows beside a sketch
// all-time window (and no exact all-time window, whose totals hold every item) restores. A
// late event adds to the all-time sketch's journal, which holds its item; the whole snapshot
// stores the sketch, not the journal, so it must leave out an item only the journal holds
// (the restore refuses "an item in the table held by nothing").
func TestSnapshotSketchAllWithoutExactAll(t *testing.T) {
	cfg := exactTestConfig()
	cfg.Windows = append(cfg.Windows,
		WindowConfig{Name: "all", Kind: windowset.AllTime, Mode: windowset.Sketch},
		WindowConfig{Name: "sk-calendar-day", Kind: windowset.Calendar, Span: trmodel.Day, Mode: windowset.Sketch})
	cfg.Sketch = sketch.Config{Width: 1 << 8, Depth: 3, Seed: 42, Conservative: true}
	cfg.CandidateCap = 6
	restored := 0
	for seed := uint64(1); seed <= 8; seed++ {
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		evs := genStream(streamOpts{seed: seed, n: 4000, items: 2000, step: 20 * time.Second, counts: 3, late: true})
		for i, ev := range evs {
			p.Add(ev)
			p.TakeClosed()
			if i%97 != 0 {
				continue
			}
			b := mustMarshal(t, p)
			q, err := Restore(cfg, b)
			if err != nil {
				t.Fatalf("seed %d, event %d: restore of a whole snapshot: %v", seed, i, err)
			}
			if !reflect.DeepEqual(allTops(t, p), allTops(t, q)) {
				t.Fatalf("seed %d, event %d: the restored partition lists differently", seed, i)
			}
			restored++
		}
	}
	t.Logf("%d whole snapshots restored", restored)
}
