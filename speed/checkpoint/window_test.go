package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/model/event"
	"trending/speed/checkpoint"
	"trending/speed/sketch"
	"trending/speed/window"
)

func smallWindowConfig() window.Config {
	c := window.DefaultConfig()
	c.Sketch = sketch.Config{Width: 1 << 10, Depth: 4, Seed: 5, Conservative: true}
	return c
}

func stream(seed uint64, n int, from time.Time) []event.Event {
	r := rand.New(rand.NewPCG(seed, 3))
	now := from
	evs := make([]event.Event, 0, n)
	for range n {
		now = now.Add(time.Duration(r.IntN(4000)) * time.Millisecond)
		ts := now.Add(-time.Duration(r.IntN(20_000)) * time.Millisecond)
		if r.IntN(20) == 0 {
			ts = now.Add(-time.Duration(r.IntN(3*3600)) * time.Second) // late
		}
		evs = append(evs, event.Event{ItemID: fmt.Sprintf("v%d", r.IntN(300)), Count: uint32(1 + r.IntN(3)), TS: ts.Truncate(time.Millisecond)})
	}
	return evs
}

func saveWindow(ctx context.Context, s *checkpoint.Keeper, p *window.Partition, off int64) (*window.IncrementalSnapshot, error) {
	snap, err := p.SnapshotIncremental()
	if err != nil {
		return nil, err
	}
	state, pieces, err := snap.Encode()
	if err != nil {
		return nil, err
	}
	cp := checkpoint.Checkpoint{Topic: "views", Partition: 0, Offset: off, CreatedAt: time.Now(), State: state}
	for _, pc := range pieces {
		cp.Pieces = append(cp.Pieces, checkpoint.Piece{Name: pc.Name, Data: pc.Data})
	}
	if _, err := s.Save(ctx, cp); err != nil {
		return nil, err
	}
	return snap, nil
}

func loadWindow(ctx context.Context, s *checkpoint.Keeper, cfg window.Config) (*window.Partition, int64, error) {
	var p *window.Partition
	cp, found, err := s.Load(ctx, "views", 0, func(cp checkpoint.Checkpoint) error {
		pieces := make([]window.Piece, len(cp.Pieces))
		for i, pc := range cp.Pieces {
			pieces[i] = window.Piece{Name: pc.Name, Data: pc.Data}
		}
		var err error
		p, err = window.RestoreIncremental(cfg, cp.State, pieces)
		return err
	})
	if err == nil && !found {
		err = errors.New("no checkpoint")
	}
	return p, cp.Offset, err
}

// windowCrashSuite checkpoints a partition's window state (the default windows) every
// simulated minute for two hours, and at one checkpoint crashes the save after some pieces,
// after all of them, or after the manifest: a restarted store restores exactly the state of
// the checkpoint it then finds (the previous one, or the new one), and replaying the log from
// its offset ends in the state of an uninterrupted run.
func windowCrashSuite(t *testing.T, obj *objstore.Client) {
	ctx := itest.Context(t, 300*time.Second)
	cfg := smallWindowConfig()
	evs := stream(1, 4000, time.Date(2026, 3, 31, 22, 30, 0, 0, time.UTC))
	whole, _ := window.New(cfg)
	for _, ev := range evs {
		whole.Add(ev)
	}
	want := func(n int) []byte {
		p, _ := window.New(cfg)
		for _, ev := range evs[:n] {
			p.Add(ev)
		}
		b, _ := p.MarshalBinary()
		return b
	}
	for ci, crash := range []struct {
		step  string
		after int
	}{{"piece", 1}, {"piece", 3}, {"pieces", 1}, {"manifest", 1}} {
		t.Run(fmt.Sprintf("%s-%d", crash.step, crash.after), func(t *testing.T) {
			prefix := fmt.Sprintf("wcrash%d", ci)
			s := checkpoint.NewKeeper(obj, prefix, 3, nil)
			s.SetParallel(1)
			p, _ := window.New(cfg)
			crashAt := 2030 + 37*ci
			lastSaved := 0
			for i, ev := range evs[:crashAt+1] {
				p.Add(ev)
				if (i+1)%100 != 0 && i != crashAt {
					continue
				}
				if i == crashAt {
					n := 0
					s.SetCrash(func(step string) error {
						if step == crash.step {
							if n++; n == crash.after {
								return errCrash
							}
						}
						return nil
					})
				}
				snap, err := saveWindow(ctx, s, p, int64(i+1))
				if i == crashAt {
					if !errors.Is(err, errCrash) {
						t.Fatalf("crash save: %v", err)
					}
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				p.Stored(snap)
				lastSaved = i + 1
			}
			wantOff := int64(lastSaved)
			if crash.step == "manifest" {
				wantOff = int64(crashAt + 1)
			}
			s2 := checkpoint.NewKeeper(obj, prefix, 3, nil)
			got, off, err := loadWindow(ctx, s2, cfg)
			if err != nil || off != wantOff {
				t.Fatalf("restore: offset %d, %v; want offset %d", off, err, wantOff)
			}
			if b, _ := got.MarshalBinary(); !bytes.Equal(b, want(int(off))) {
				t.Fatalf("restored state differs from the state at offset %d", off)
			}
			// Replay the log from the offset; keep checkpointing through the restarted store.
			for i, ev := range evs[off:] {
				got.Add(ev)
				if (i+1)%100 == 0 {
					snap, err := saveWindow(ctx, s2, got, off+int64(i+1))
					if err != nil {
						t.Fatal(err)
					}
					got.Stored(snap)
				}
			}
			a, _ := got.MarshalBinary()
			b, _ := whole.MarshalBinary()
			if !bytes.Equal(a, b) {
				t.Fatal("after replay the state differs from an uninterrupted run")
			}
			last, off2, err := loadWindow(ctx, checkpoint.NewKeeper(obj, prefix, 3, nil), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if c, _ := last.MarshalBinary(); !bytes.Equal(c, want(int(off2))) {
				t.Fatalf("the last checkpoint (offset %d) restores to another state", off2)
			}
			pieces, refd := stored(t, ctx, obj, prefix+"/views/p00000/")
			if fmt.Sprint(pieces) != fmt.Sprint(refd) {
				t.Fatalf("%d pieces stored, %d referenced", len(pieces), len(refd))
			}
		})
	}
}

func TestWindowCrashEmbedded(t *testing.T) { windowCrashSuite(t, s3Store(t)) }
func TestWindowCrashMinIO(t *testing.T)    { windowCrashSuite(t, minioStore(t)) }
