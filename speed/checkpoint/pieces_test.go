package checkpoint_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/speed/checkpoint"
)

var errCrash = errors.New("crash")

func piece(s string) checkpoint.Piece {
	return checkpoint.Piece{Name: checkpoint.PieceName([]byte(s)), Data: []byte(s)}
}

func ref(s string) checkpoint.Piece { return checkpoint.Piece{Name: checkpoint.PieceName([]byte(s))} }

// stored returns the piece names in the bucket and the piece names referenced by the
// manifests in it (which Load reads).
func stored(t *testing.T, ctx context.Context, obj *objstore.Client, dir string) (pieces, refd []string) {
	t.Helper()
	objs, err := obj.List(ctx, dir)
	for try := 0; err != nil && try < 3; try++ {
		// The embedded S3 (gofakes3 over afero) now and then answers a listing with a 500;
		// MinIO does not. Keeper.prune logs such an error and the next save prunes.
		time.Sleep(100 * time.Millisecond)
		objs, err = obj.List(ctx, dir)
	}
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, o := range objs {
		switch {
		case strings.HasSuffix(o.Key, ".piece"):
			pieces = append(pieces, strings.TrimSuffix(o.Key[strings.LastIndexByte(o.Key, '/')+1:], ".piece"))
		case strings.HasSuffix(o.Key, ".ckpt"):
			raw, err := obj.Get(ctx, o.Key)
			if err != nil {
				t.Fatal(err)
			}
			cp, err := checkpoint.Decode(raw)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range cp.Pieces {
				if !seen[p.Name] {
					seen[p.Name] = true
					refd = append(refd, p.Name)
				}
			}
		}
	}
	slices.Sort(pieces)
	slices.Sort(refd)
	return pieces, refd
}

func s3Store(t *testing.T) *objstore.Client {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
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
	if err := obj.EnsureBucket(ctx); err != nil {
		t.Fatal(err)
	}
	return obj
}

func minioStore(t *testing.T) *objstore.Client {
	cfg := itest.S3(t)
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = cfg.Endpoint, itest.Name(t, "ckpt"), cfg.AccessKey, cfg.SecretKey
	obj, err := objstore.New(context.Background(), oc)
	if err != nil {
		t.Fatal(err)
	}
	if err := obj.EnsureBucket(itest.Context(t, 30*time.Second)); err != nil {
		t.Fatal(err)
	}
	return obj
}

// crashSuite crashes a Save after each of its steps and checks that a restarted store loads
// the previous checkpoint (a crash before the manifest) or the new one (after it), whole, and
// that the next Save prunes the orphans.
func crashSuite(t *testing.T, obj *objstore.Client) {
	ctx := itest.Context(t, 120*time.Second)
	steps := []struct {
		name  string
		after int    // crash at the after-th call of step
		step  string // "piece", "pieces", "manifest"
		want  int64  // the offset Load then returns
	}{
		{"after one piece", 1, "piece", 100},
		{"after two pieces", 2, "piece", 100},
		{"after all pieces", 1, "pieces", 100},
		{"after the manifest", 1, "manifest", 200},
	}
	for i, tc := range steps {
		t.Run(tc.name, func(t *testing.T) {
			s := checkpoint.NewKeeper(obj, fmt.Sprintf("crash%d", i), 2, nil)
			s.SetParallel(1) // the pieces go up in order, so "after one piece" is one piece
			first := checkpoint.Checkpoint{Topic: "views", Partition: 3, Offset: 100, CreatedAt: time.Now(), State: []byte("m1"),
				Pieces: []checkpoint.Piece{piece("minute 1"), piece("hour 0")}}
			if _, err := s.Save(ctx, first); err != nil {
				t.Fatal(err)
			}
			n := 0
			s.SetCrash(func(step string) error {
				if step == tc.step {
					if n++; n == tc.after {
						return errCrash
					}
				}
				return nil
			})
			second := checkpoint.Checkpoint{Topic: "views", Partition: 3, Offset: 200, CreatedAt: time.Now(), State: []byte("m2"),
				Pieces: []checkpoint.Piece{ref("hour 0"), piece("minute 2"), piece("minute 3"), piece("sketch day 4")}}
			if _, err := s.Save(ctx, second); !errors.Is(err, errCrash) {
				t.Fatalf("save with a crash after %s %d: %v", tc.step, tc.after, err)
			}
			// A new process: a new store.
			s2 := checkpoint.NewKeeper(obj, fmt.Sprintf("crash%d", i), 2, nil)
			cp, found, err := s2.Load(ctx, "views", 3, nil)
			if err != nil || !found || cp.Offset != tc.want {
				t.Fatalf("load: offset %d found=%v err=%v, want %d", cp.Offset, found, err, tc.want)
			}
			want := first
			if tc.want == 200 {
				want = second
				want.Pieces = []checkpoint.Piece{piece("hour 0"), piece("minute 2"), piece("minute 3"), piece("sketch day 4")}
			}
			if !bytes.Equal(cp.State, want.State) || len(cp.Pieces) != len(want.Pieces) {
				t.Fatalf("load: %q with %d pieces, want %q with %d", cp.State, len(cp.Pieces), want.State, len(want.Pieces))
			}
			for j, p := range cp.Pieces {
				if p.Name != want.Pieces[j].Name || !bytes.Equal(p.Data, want.Pieces[j].Data) {
					t.Fatalf("piece %d: %s %q, want %s %q", j, p.Name, p.Data, want.Pieces[j].Name, want.Pieces[j].Data)
				}
			}
			// The next checkpoint references what it loaded by name and prunes the orphans.
			third := checkpoint.Checkpoint{Topic: "views", Partition: 3, Offset: 300, CreatedAt: time.Now(), State: []byte("m3"),
				Pieces: []checkpoint.Piece{ref("hour 0"), piece("minute 5")}}
			if _, err := s2.Save(ctx, third); err != nil {
				t.Fatal(err)
			}
			pieces, refd := stored(t, ctx, obj, fmt.Sprintf("crash%d/views/p00003/", i))
			if !slices.Equal(pieces, refd) {
				t.Fatalf("after the next save: pieces %v, referenced %v", pieces, refd)
			}
		})
	}
}

func TestPiecesCrashEmbedded(t *testing.T) { crashSuite(t, s3Store(t)) }
func TestPiecesCrashMinIO(t *testing.T)    { crashSuite(t, minioStore(t)) }

// pruneProperty saves random checkpoints (random pieces, some referenced by name, random
// crashes, random restarts) and checks after every successful save that the bucket holds
// exactly the pieces the retained manifests reference, and that the newest loads whole.
func pruneProperty(t *testing.T, obj *objstore.Client, rounds int, seed uint64) {
	ctx := itest.Context(t, 300*time.Second)
	r := rand.New(rand.NewPCG(seed, 7))
	prefix := fmt.Sprintf("prop%d", seed)
	// One piece at a time: a crash then leaves no upload in flight. With several, the crash
	// cancels its siblings' requests, and one whose body was already sent can still be
	// written by the server after the next save has pruned: an orphan that exists as long
	// as a dead process's upload can land (the save after deletes it), which this check,
	// right after each save, cannot tell from a prune that missed one.
	newKeeper := func() *checkpoint.Keeper {
		s := checkpoint.NewKeeper(obj, prefix, 3, nil)
		s.SetParallel(1)
		return s
	}
	s := newKeeper()
	var last []string // the contents of the newest saved checkpoint's pieces: stored
	off := int64(0)
	for round := range rounds {
		if r.IntN(8) == 0 {
			s = newKeeper() // a restart
		}
		off += 10
		var ps []checkpoint.Piece
		var contents []string
		for range r.IntN(6) {
			c := fmt.Sprintf("piece %d", r.IntN(20))
			if slices.Contains(contents, c) {
				continue
			}
			contents = append(contents, c)
			if slices.Contains(last, c) && r.IntN(2) == 0 {
				ps = append(ps, ref(c))
			} else {
				ps = append(ps, piece(c))
			}
		}
		crashAt := -1
		if r.IntN(4) == 0 {
			crashAt = r.IntN(len(ps) + 2)
		}
		n := 0
		s.SetCrash(func(step string) error {
			if crashAt >= 0 && n == crashAt {
				return errCrash
			}
			n++
			return nil
		})
		cp := checkpoint.Checkpoint{Topic: "views", Partition: 1, Offset: off, CreatedAt: time.Now(), State: []byte(fmt.Sprint(off)), Pieces: ps}
		_, err := s.Save(ctx, cp)
		if errors.Is(err, errCrash) {
			if n >= len(ps)+1 { // crashed after the manifest: it is the newest
				last = contents
			}
			s = newKeeper()
			continue
		}
		if err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		last = contents
		pieces, refd := stored(t, ctx, obj, prefix+"/views/p00001/")
		if !slices.Equal(pieces, refd) {
			t.Fatalf("round %d: pieces %v, referenced %v", round, pieces, refd)
		}
		got, found, err := checkpoint.NewKeeper(obj, prefix, 3, nil).Load(ctx, "views", 1, nil)
		if err != nil || !found || got.Offset != off {
			t.Fatalf("round %d: load offset %d found=%v err=%v", round, got.Offset, found, err)
		}
		for i, p := range got.Pieces {
			if string(p.Data) != contents[i] {
				t.Fatalf("round %d: piece %d is %q, want %q", round, i, p.Data, contents[i])
			}
		}
	}
}

func TestPruneProperty(t *testing.T) {
	obj := s3Store(t)
	for seed := range uint64(4) {
		pruneProperty(t, obj, 60, seed)
	}
}

func TestPrunePropertyMinIO(t *testing.T) { pruneProperty(t, minioStore(t), 40, 99) }

// A reference by name to a piece the store does not hold fails the save and writes no
// manifest.
func TestMissingPiece(t *testing.T) {
	obj := s3Store(t)
	ctx := itest.Context(t, 30*time.Second)
	s := checkpoint.NewKeeper(obj, "", 2, nil)
	_, err := s.Save(ctx, checkpoint.Checkpoint{Topic: "views", Partition: 0, Offset: 5, State: []byte("x"), Pieces: []checkpoint.Piece{ref("never stored")}})
	if !errors.Is(err, checkpoint.ErrMissingPiece) {
		t.Fatalf("save: %v, want ErrMissingPiece", err)
	}
	if _, found, _ := s.Load(ctx, "views", 0, nil); found {
		t.Fatal("a manifest was written")
	}
	// Equal pieces listed twice, once by name only: the bytes of the other are used.
	if _, err := s.Save(ctx, checkpoint.Checkpoint{Topic: "views", Partition: 0, Offset: 6, State: []byte("x"), Pieces: []checkpoint.Piece{ref("twin"), piece("twin")}}); err != nil {
		t.Fatalf("save with a piece listed twice: %v", err)
	}
	// A corrupt piece makes Load fall back to the previous checkpoint.
	for _, off := range []int64{10, 20} {
		if _, err := s.Save(ctx, checkpoint.Checkpoint{Topic: "views", Partition: 0, Offset: off, State: []byte("x"), Pieces: []checkpoint.Piece{piece(fmt.Sprint(off))}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := obj.Put(ctx, s.PieceKey("views", 0, checkpoint.PieceName([]byte("20"))), []byte("21")); err != nil {
		t.Fatal(err)
	}
	cp, found, err := s.Load(ctx, "views", 0, nil)
	if err != nil || !found || cp.Offset != 10 {
		t.Fatalf("load with a corrupt newest piece: offset %d found=%v err=%v, want 10", cp.Offset, found, err)
	}
}
