// Package checkpoint stores a speed partition's state together with the Kafka offset it
// includes, so recovery loads the state and replays the log from exactly that offset: no
// event lost, none counted twice (docs/requirements.md, "Failures").
//
// A checkpoint is a manifest object (the offset, the small changing part of the state and
// the names of the pieces it references) and pieces: immutable parts of the state (closed
// buckets, their sketches) stored once each under the hash of their bytes and shared by every
// checkpoint that references them. Save writes the missing pieces first and the manifest
// last, so a reader that sees a manifest finds every piece it names; a crash in between
// leaves orphan pieces that the next prune deletes. Pruning keeps the newest manifests and
// deletes only pieces none of them references.
//
// An S3 PUT makes an object visible whole or not at all, so a reader never sees a half-written
// object; each manifest also carries a CRC32C and each piece is checked against its name (a
// SHA-256 prefix), so a corrupt checkpoint (a bad disk, a truncated copy, a bug) is detected,
// skipped with a warning and the previous one used. The format is documented in
// docs/format/checkpoint.md; version 1 objects (the whole state in one object) still load.
//
// In detail (DESIGN.md's file map has the line): a partition's state and the offset it
// includes: a checksummed manifest written last, referencing content-named immutable
// pieces written once (parallel upload and fetch); newest valid one loaded, corrupt ones
// or ones with a missing piece skipped, old manifests pruned and then only unreferenced
// pieces (format (docs/format/checkpoint.md))
package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"trending/internal/objstore"
)

// Checkpoint is one partition's state and the offset of the first message it does not
// include (the offset to resume reading at).
type Checkpoint struct {
	Topic     string
	Partition int
	Offset    int64
	CreatedAt time.Time
	// State is the manifest's own part of the state (version 2) or the whole state
	// (version 1).
	State []byte
	// Pieces are the immutable parts State references, in the order the manifest lists
	// them. On Save, a piece with nil Data is one a previous Save stored: only its name is
	// written (Save fails with ErrMissingPiece if the store no longer has it). Load fills in
	// every piece's Data.
	Pieces []Piece
}

// Piece is an immutable part of a partition's state, stored once under its name.
type Piece struct {
	// Name is PieceName(Data).
	Name string
	Data []byte
}

// PieceName is the name a piece is stored under: the first 16 bytes of the SHA-256 of its
// bytes, in lowercase hex. Equal pieces share one object, and Load checks every piece
// against its name.
func PieceName(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:16])
}

var (
	// ErrCorrupt: the object is not a valid checkpoint.
	ErrCorrupt = errors.New("corrupt checkpoint")
	// ErrMissingPiece: Save was asked to reference a piece by name that the store does not
	// hold. The caller should encode its state again with every piece's bytes.
	ErrMissingPiece = errors.New("checkpoint piece not in the store")
	magic           = [4]byte{'T', 'R', 'C', 'K'}
	castagnoli      = crc32.MakeTable(crc32.Castagnoli)
)

const (
	formatV1      = 1 // the whole state in the object
	formatVersion = 2 // a manifest: state plus piece names
	pieceNameLen  = 32
)

// Encode lays out a checkpoint manifest (version 2):
//
//	magic "TRCK" | version u16 | partition u32 | offset i64 | created unix ms i64 |
//	topic len u16 | topic | pieces u32 | pieces x 32-byte name | state len u64 | state |
//	crc32c u32 (of everything before it)
//
// All integers big-endian. Version 1 is the same without the piece list.
func Encode(cp Checkpoint) []byte {
	b := make([]byte, 0, 4+2+4+8+8+2+len(cp.Topic)+4+pieceNameLen*len(cp.Pieces)+8+len(cp.State)+4)
	b = append(b, magic[:]...)
	b = binary.BigEndian.AppendUint16(b, formatVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(cp.Partition))
	b = binary.BigEndian.AppendUint64(b, uint64(cp.Offset))
	b = binary.BigEndian.AppendUint64(b, uint64(cp.CreatedAt.UnixMilli()))
	b = binary.BigEndian.AppendUint16(b, uint16(len(cp.Topic)))
	b = append(b, cp.Topic...)
	b = binary.BigEndian.AppendUint32(b, uint32(len(cp.Pieces)))
	for _, p := range cp.Pieces {
		if len(p.Name) != pieceNameLen {
			panic("BUG: checkpoint: piece name " + p.Name + " is not a PieceName")
		}
		b = append(b, p.Name...)
	}
	b = binary.BigEndian.AppendUint64(b, uint64(len(cp.State)))
	b = append(b, cp.State...)
	return appendCRC(b)
}

func appendCRC(b []byte) []byte {
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// Decode parses and verifies a checkpoint of version 1 or 2; every malformed input is an
// ErrCorrupt, never a panic. The pieces of a version 2 manifest have names and no Data.
func Decode(b []byte) (Checkpoint, error) {
	var cp Checkpoint
	const fixed = 4 + 2 + 4 + 8 + 8 + 2
	if len(b) < fixed+8+4 {
		return cp, fmt.Errorf("%w: %d bytes is too short", ErrCorrupt, len(b))
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return cp, fmt.Errorf("%w: checksum mismatch", ErrCorrupt)
	}
	if [4]byte(body[:4]) != magic {
		return cp, fmt.Errorf("%w: bad magic", ErrCorrupt)
	}
	v := binary.BigEndian.Uint16(body[4:])
	if v != formatVersion && v != formatV1 {
		return cp, fmt.Errorf("%w: format version %d, this build reads %d and %d", ErrCorrupt, v, formatV1, formatVersion)
	}
	cp.Partition = int(binary.BigEndian.Uint32(body[6:]))
	cp.Offset = int64(binary.BigEndian.Uint64(body[10:]))
	cp.CreatedAt = time.UnixMilli(int64(binary.BigEndian.Uint64(body[18:]))).UTC()
	tl := int(binary.BigEndian.Uint16(body[26:]))
	rest := body[fixed:]
	if len(rest) < tl+8 {
		return cp, fmt.Errorf("%w: topic length %d past the end", ErrCorrupt, tl)
	}
	cp.Topic = string(rest[:tl])
	rest = rest[tl:]
	if v == formatVersion {
		n := binary.BigEndian.Uint32(rest)
		rest = rest[4:]
		if uint64(len(rest)) < uint64(n)*pieceNameLen+8 {
			return cp, fmt.Errorf("%w: %d piece names past the end", ErrCorrupt, n)
		}
		if n > 0 {
			cp.Pieces = make([]Piece, n)
		}
		for i := range cp.Pieces {
			name := string(rest[:pieceNameLen])
			rest = rest[pieceNameLen:]
			if !validName(name) {
				return cp, fmt.Errorf("%w: piece name %q", ErrCorrupt, name)
			}
			cp.Pieces[i].Name = name
		}
	}
	sl := binary.BigEndian.Uint64(rest)
	rest = rest[8:]
	if uint64(len(rest)) != sl {
		return cp, fmt.Errorf("%w: state length %d, %d bytes present", ErrCorrupt, sl, len(rest))
	}
	cp.State = rest
	if cp.Offset < 0 {
		return cp, fmt.Errorf("%w: negative offset %d", ErrCorrupt, cp.Offset)
	}
	return cp, nil
}

// validName reports whether s could be a PieceName: 32 lowercase hex digits.
func validName(s string) bool {
	if len(s) != pieceNameLen {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Keeper keeps manifests under PREFIX/TOPIC/pNNNNN/oOFFSET.ckpt (the zero-padded offset makes
// key order offset order, so the newest is the last key) and pieces under
// PREFIX/TOPIC/pNNNNN/pieces/NAME.piece. A Keeper is safe for concurrent use by the goroutines
// of different partitions; one partition's Saves must not run concurrently (one owner
// checkpoints a partition).
type Keeper struct {
	obj    *objstore.Client
	prefix string
	keep   int
	log    *slog.Logger
	// parallel bounds the concurrent piece uploads and downloads of one Save or Load.
	parallel int

	// crash, when set (tests), is called after each step of a Save ("piece" after each piece
	// upload, "pieces" after all of them, "manifest" after the manifest); an error stops the
	// Save there, as a crash would.
	crash func(step string) error

	mu   sync.Mutex
	refs map[string][]string // manifest key -> its piece names, for pruning
	have map[string]bool     // piece key -> stored (referenced by a retained manifest)
}

// NewKeeper keeps the newest keep (at least 2, so a corrupt newest one has a predecessor)
// checkpoints per partition under prefix (default "checkpoints").
func NewKeeper(obj *objstore.Client, prefix string, keep int, log *slog.Logger) *Keeper {
	if prefix == "" {
		prefix = "checkpoints"
	}
	if keep < 2 {
		keep = 2
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Keeper{obj: obj, prefix: strings.TrimSuffix(prefix, "/"), keep: keep, log: log, parallel: 8,
		refs: map[string][]string{}, have: map[string]bool{}}
}

func (s *Keeper) dir(topic string, partition int) string {
	return fmt.Sprintf("%s/%s/p%05d/", s.prefix, topic, partition)
}

// Key returns the object key of a checkpoint's manifest.
func (s *Keeper) Key(cp Checkpoint) string {
	return fmt.Sprintf("%so%019d.ckpt", s.dir(cp.Topic, cp.Partition), cp.Offset)
}

// PieceKey returns the object key of a partition's piece.
func (s *Keeper) PieceKey(topic string, partition int, name string) string {
	return s.dir(topic, partition) + "pieces/" + name + ".piece"
}

// SaveStats says what a Save wrote.
type SaveStats struct {
	// Pieces and PieceBytes count the pieces uploaded; Reused the pieces referenced by name
	// only.
	Pieces, Reused int
	PieceBytes     int64
	// ManifestBytes is the manifest's size.
	ManifestBytes int64
}

// Save writes the pieces the store does not hold yet (in parallel), then the manifest, then
// prunes the oldest checkpoints beyond keep and every piece no retained manifest references.
// A failed prune is logged, not returned: the checkpoint itself is safe.
func (s *Keeper) Save(ctx context.Context, cp Checkpoint) (string, error) {
	key, _, err := s.SaveWithStats(ctx, cp)
	return key, err
}

// SaveWithStats is Save, also reporting what it wrote.
func (s *Keeper) SaveWithStats(ctx context.Context, cp Checkpoint) (string, SaveStats, error) {
	var st SaveStats
	key := s.Key(cp)
	if err := s.putPieces(ctx, cp, &st); err != nil {
		return "", st, fmt.Errorf("save checkpoint %s: %w", key, err)
	}
	if err := s.step("pieces"); err != nil {
		return "", st, err
	}
	raw := Encode(cp)
	if _, err := s.obj.Put(ctx, key, raw); err != nil {
		return "", st, fmt.Errorf("save checkpoint %s: %w", key, err)
	}
	if err := s.step("manifest"); err != nil {
		return "", st, err
	}
	st.ManifestBytes = int64(len(raw))
	names := make([]string, len(cp.Pieces))
	for i, p := range cp.Pieces {
		names[i] = p.Name
	}
	s.mu.Lock()
	s.refs[key] = names
	s.mu.Unlock()
	if err := s.prune(ctx, cp.Topic, cp.Partition); err != nil {
		s.log.Warn("prune checkpoints", "topic", cp.Topic, "partition", cp.Partition, "err", err)
	}
	return key, st, nil
}

// putPieces uploads the pieces with data that the store does not hold and checks that those
// without data are held.
func (s *Keeper) putPieces(ctx context.Context, cp Checkpoint, st *SaveStats) error {
	var todo []Piece
	var unknown []string
	// A name may be listed twice (equal pieces), once with its bytes and once without.
	data := make(map[string][]byte, len(cp.Pieces))
	for _, p := range cp.Pieces {
		if data[p.Name] == nil {
			data[p.Name] = p.Data
		}
	}
	seen := make(map[string]bool, len(cp.Pieces))
	s.mu.Lock()
	for _, p := range cp.Pieces {
		if seen[p.Name] {
			continue
		}
		seen[p.Name] = true
		p.Data = data[p.Name]
		k := s.PieceKey(cp.Topic, cp.Partition, p.Name)
		switch {
		case s.have[k]:
			st.Reused++
		case p.Data != nil:
			todo = append(todo, p)
		default:
			unknown = append(unknown, k)
		}
	}
	s.mu.Unlock()
	if len(unknown) > 0 {
		// A fresh store (a restart) knows no piece yet: look in the bucket.
		objs, err := s.obj.List(ctx, s.dir(cp.Topic, cp.Partition)+"pieces/")
		if err != nil {
			return fmt.Errorf("list pieces: %w", err)
		}
		there := make(map[string]bool, len(objs))
		for _, o := range objs {
			there[o.Key] = true
		}
		for _, k := range unknown {
			if !there[k] {
				return fmt.Errorf("%w: %s", ErrMissingPiece, k)
			}
		}
		st.Reused += len(unknown)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.parallel)
	for _, p := range todo {
		if PieceName(p.Data) != p.Name {
			panic("BUG: checkpoint: piece " + p.Name + " is not named by its bytes")
		}
		st.Pieces++
		st.PieceBytes += int64(len(p.Data))
		g.Go(func() error {
			if _, err := s.obj.Put(gctx, s.PieceKey(cp.Topic, cp.Partition, p.Name), p.Data); err != nil {
				return err
			}
			return s.step("piece")
		})
	}
	return g.Wait()
}

func (s *Keeper) step(name string) error {
	if s.crash == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.crash(name)
}

func (s *Keeper) list(ctx context.Context, topic string, partition int) ([]string, error) {
	objs, err := s.obj.List(ctx, s.dir(topic, partition))
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(objs))
	for _, o := range objs {
		if strings.HasSuffix(o.Key, ".ckpt") {
			keys = append(keys, o.Key)
		}
	}
	sort.Strings(keys)
	return keys, nil
}

// prune deletes the manifests beyond the newest keep, then every piece of the partition that
// no retained manifest references: those of pruned checkpoints and orphans of a Save that
// failed or crashed before its manifest. A retained manifest that cannot be read keeps every
// piece (its references are unknown).
func (s *Keeper) prune(ctx context.Context, topic string, partition int) error {
	keys, err := s.list(ctx, topic, partition)
	if err != nil {
		return err
	}
	if len(keys) > s.keep {
		if err := s.obj.Delete(ctx, keys[:len(keys)-s.keep]...); err != nil {
			return err
		}
		s.mu.Lock()
		for _, k := range keys[:len(keys)-s.keep] {
			delete(s.refs, k)
		}
		s.mu.Unlock()
		keys = keys[len(keys)-s.keep:]
	}
	refd := map[string]bool{}
	for _, k := range keys {
		names, err := s.pieceNames(ctx, k)
		if err != nil {
			return fmt.Errorf("read manifest %s to prune pieces: %w", k, err)
		}
		for _, n := range names {
			refd[s.PieceKey(topic, partition, n)] = true
		}
	}
	objs, err := s.obj.List(ctx, s.dir(topic, partition)+"pieces/")
	if err != nil {
		return err
	}
	var del []string
	for _, o := range objs {
		if !refd[o.Key] {
			del = append(del, o.Key)
		}
	}
	s.mu.Lock()
	for _, o := range objs {
		if refd[o.Key] {
			s.have[o.Key] = true
		}
	}
	for _, k := range del {
		delete(s.have, k)
	}
	s.mu.Unlock()
	if len(del) == 0 {
		return nil
	}
	return s.obj.Delete(ctx, del...)
}

// pieceNames returns the pieces a manifest references, from memory or from the bucket. An
// unreadable manifest is an error (pruning must then not guess); a corrupt one references
// nothing (Load will skip it).
func (s *Keeper) pieceNames(ctx context.Context, key string) ([]string, error) {
	s.mu.Lock()
	names, ok := s.refs[key]
	s.mu.Unlock()
	if ok {
		return names, nil
	}
	raw, err := s.obj.Get(ctx, key)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	cp, err := Decode(raw)
	if err != nil {
		s.log.Warn("corrupt checkpoint manifest; its pieces may be pruned", "key", key, "err", err)
	}
	names = make([]string, len(cp.Pieces))
	for i, p := range cp.Pieces {
		names[i] = p.Name
	}
	s.mu.Lock()
	s.refs[key] = names
	s.mu.Unlock()
	return names, nil
}

// Load returns the newest valid checkpoint of a partition with every piece's data, skipping
// corrupt ones, those with a missing or corrupt piece, and those that valid reports bad (e.g.
// a state from an incompatible window configuration) with a warning. found is false when
// there is none: start from the beginning of the log.
func (s *Keeper) Load(ctx context.Context, topic string, partition int, valid func(Checkpoint) error) (cp Checkpoint, found bool, err error) {
	keys, err := s.list(ctx, topic, partition)
	if err != nil {
		return cp, false, fmt.Errorf("list checkpoints of %s/%d: %w", topic, partition, err)
	}
	for i := len(keys) - 1; i >= 0; i-- {
		raw, err := s.obj.Get(ctx, keys[i])
		if errors.Is(err, objstore.ErrNotFound) {
			continue // pruned between list and get
		}
		if err != nil {
			return cp, false, fmt.Errorf("load checkpoint %s: %w", keys[i], err)
		}
		c, err := Decode(raw)
		if err == nil && (c.Topic != topic || c.Partition != partition) {
			err = fmt.Errorf("%w: holds %s/%d", ErrCorrupt, c.Topic, c.Partition)
		}
		if err == nil {
			err = s.getPieces(ctx, &c)
			if err != nil && ctx.Err() != nil {
				return cp, false, err
			}
		}
		if err == nil && valid != nil {
			err = valid(c)
		}
		if err != nil {
			s.log.Warn("skipping unusable checkpoint; trying the previous one", "key", keys[i], "err", err)
			continue
		}
		names := make([]string, len(c.Pieces))
		s.mu.Lock()
		for i, p := range c.Pieces {
			names[i] = p.Name
			s.have[s.PieceKey(topic, partition, p.Name)] = true
		}
		s.refs[keys[i]] = names
		s.mu.Unlock()
		return c, true, nil
	}
	return cp, false, nil
}

// getPieces fetches a manifest's pieces in parallel and checks each against its name.
func (s *Keeper) getPieces(ctx context.Context, cp *Checkpoint) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.parallel)
	for i := range cp.Pieces {
		p := &cp.Pieces[i]
		g.Go(func() error {
			k := s.PieceKey(cp.Topic, cp.Partition, p.Name)
			b, err := s.obj.Get(gctx, k)
			if err != nil {
				return fmt.Errorf("piece %s: %w", k, err)
			}
			if PieceName(b) != p.Name {
				return fmt.Errorf("%w: piece %s does not match its name", ErrCorrupt, k)
			}
			p.Data = b
			return nil
		})
	}
	return g.Wait()
}
