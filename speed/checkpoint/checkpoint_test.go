package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/speed/checkpoint"
)

func TestEncodeDecode(t *testing.T) {
	cp := checkpoint.Checkpoint{Topic: "views", Partition: 12, Offset: 48210, CreatedAt: time.UnixMilli(1763114760000).UTC(), State: []byte("state bytes"),
		Pieces: []checkpoint.Piece{{Name: checkpoint.PieceName([]byte("a"))}, {Name: checkpoint.PieceName([]byte("b"))}}}
	got, err := checkpoint.Decode(checkpoint.Encode(cp))
	if err != nil {
		t.Fatal(err)
	}
	if got.Topic != cp.Topic || got.Partition != cp.Partition || got.Offset != cp.Offset || !got.CreatedAt.Equal(cp.CreatedAt) || !bytes.Equal(got.State, cp.State) ||
		len(got.Pieces) != 2 || got.Pieces[0].Name != cp.Pieces[0].Name || got.Pieces[1].Name != cp.Pieces[1].Name {
		t.Fatalf("round trip: %+v", got)
	}
	// A version 1 checkpoint (the whole state, no pieces) still decodes.
	v1, err := checkpoint.Decode(checkpoint.EncodeV1(cp))
	if err != nil || v1.Offset != cp.Offset || !bytes.Equal(v1.State, cp.State) || v1.Pieces != nil {
		t.Fatalf("version 1: %+v, %v", v1, err)
	}
	raw := checkpoint.Encode(cp)
	for i := range raw {
		bad := bytes.Clone(raw)
		bad[i] ^= 0x40
		if _, err := checkpoint.Decode(bad); !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Fatalf("flipped byte %d: %v, want ErrCorrupt", i, err)
		}
	}
	for n := 0; n < len(raw); n++ {
		if _, err := checkpoint.Decode(raw[:n]); !errors.Is(err, checkpoint.ErrCorrupt) {
			t.Fatalf("truncated to %d: %v, want ErrCorrupt", n, err)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(checkpoint.Encode(checkpoint.Checkpoint{Topic: "views", Partition: 1, Offset: 2, State: []byte("x")}))
	f.Add([]byte("TRCK"))
	f.Add(checkpoint.Encode(checkpoint.Checkpoint{Topic: "v", Offset: 9, State: []byte("s"), Pieces: []checkpoint.Piece{{Name: checkpoint.PieceName(nil)}}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		cp, err := checkpoint.Decode(b)
		if err != nil {
			return
		}
		enc := checkpoint.Encode
		if b[5] == 1 {
			enc = checkpoint.EncodeV1
		}
		if !bytes.Equal(enc(cp), b) {
			t.Fatalf("accepted input does not re-encode to itself")
		}
	})
}

// keeperSuite runs against the embedded S3 and, in make test, MinIO.
func keeperSuite(t *testing.T, obj *objstore.Client) {
	ctx := itest.Context(t, 60*time.Second)
	if err := obj.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	s := checkpoint.NewKeeper(obj, "checkpoints", 3, nil)
	if _, found, err := s.Load(ctx, "views", 7, nil); err != nil || found {
		t.Fatalf("empty: found=%v err=%v", found, err)
	}
	for off := int64(100); off <= 600; off += 100 {
		if _, err := s.Save(ctx, checkpoint.Checkpoint{Topic: "views", Partition: 7, Offset: off, CreatedAt: time.Now(), State: []byte{byte(off / 100)}}); err != nil {
			t.Fatal(err)
		}
	}
	keys, err := obj.List(ctx, "checkpoints/views/p00007/")
	if err != nil || len(keys) != 3 {
		t.Fatalf("after pruning: %d checkpoints (%v), want 3", len(keys), err)
	}
	cp, found, err := s.Load(ctx, "views", 7, nil)
	if err != nil || !found || cp.Offset != 600 || cp.State[0] != 6 {
		t.Fatalf("newest: %+v found=%v err=%v, want offset 600", cp, found, err)
	}
	// Corrupt the newest: Load falls back to the previous one.
	if _, err := obj.Put(ctx, s.Key(cp), []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	cp, found, err = s.Load(ctx, "views", 7, nil)
	if err != nil || !found || cp.Offset != 500 {
		t.Fatalf("after corrupting the newest: %+v found=%v err=%v, want offset 500", cp, found, err)
	}
	// A validator can reject a state (e.g. another window configuration).
	cp, found, err = s.Load(ctx, "views", 7, func(c checkpoint.Checkpoint) error {
		if c.Offset == 500 {
			return errors.New("config mismatch")
		}
		return nil
	})
	if err != nil || !found || cp.Offset != 400 {
		t.Fatalf("with validator: %+v found=%v err=%v, want offset 400", cp, found, err)
	}
	// Other partitions are separate.
	if _, found, _ := s.Load(ctx, "views", 8, nil); found {
		t.Fatal("partition 8 has no checkpoint")
	}
}

func TestKeeperEmbedded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	emb, err := objstore.StartEmbedded(ctx, t.TempDir(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = emb.Endpoint, "trending", "x", "y"
	obj, err := objstore.New(ctx, oc)
	if err != nil {
		t.Fatal(err)
	}
	keeperSuite(t, obj)
}

func TestKeeperMinIO(t *testing.T) {
	cfg := itest.S3(t)
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = cfg.Endpoint, itest.Name(t, "ckpt"), cfg.AccessKey, cfg.SecretKey
	obj, err := objstore.New(context.Background(), oc)
	if err != nil {
		t.Fatal(err)
	}
	keeperSuite(t, obj)
}
