// Package checkpoint stores a speed partition's state together with the Kafka offset it
// includes, as one S3 object, so recovery loads the state and replays the log from exactly
// that offset: no event lost, none counted twice (docs/requirements.md, "Failures").
//
// An S3 PUT makes an object visible whole or not at all, so a reader never sees a half-written
// checkpoint; each object also carries a CRC32C, so a corrupt one (a bad disk, a truncated
// copy, a bug) is detected, skipped with a warning and the previous one used. The format is
// documented in docs/format/checkpoint.md.
package checkpoint

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"sort"
	"strings"
	"time"

	"trending/internal/objstore"
)

// Checkpoint is one partition's state and the offset of the first message it does not
// include (the offset to resume reading at).
type Checkpoint struct {
	Topic     string
	Partition int
	Offset    int64
	CreatedAt time.Time
	State     []byte
}

var (
	// ErrCorrupt: the object is not a valid checkpoint.
	ErrCorrupt = errors.New("corrupt checkpoint")
	magic      = [4]byte{'T', 'R', 'C', 'K'}
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

const formatVersion = 1

// Encode lays out a checkpoint:
//
//	magic "TRCK" | version u16 | partition u32 | offset i64 | created unix ms i64 |
//	topic len u16 | topic | state len u64 | state | crc32c u32 (of everything before it)
//
// All integers big-endian.
func Encode(cp Checkpoint) []byte {
	b := make([]byte, 0, 4+2+4+8+8+2+len(cp.Topic)+8+len(cp.State)+4)
	b = append(b, magic[:]...)
	b = binary.BigEndian.AppendUint16(b, formatVersion)
	b = binary.BigEndian.AppendUint32(b, uint32(cp.Partition))
	b = binary.BigEndian.AppendUint64(b, uint64(cp.Offset))
	b = binary.BigEndian.AppendUint64(b, uint64(cp.CreatedAt.UnixMilli()))
	b = binary.BigEndian.AppendUint16(b, uint16(len(cp.Topic)))
	b = append(b, cp.Topic...)
	b = binary.BigEndian.AppendUint64(b, uint64(len(cp.State)))
	b = append(b, cp.State...)
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// Decode parses and verifies a checkpoint; every malformed input is an ErrCorrupt, never a
// panic.
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
	if v := binary.BigEndian.Uint16(body[4:]); v != formatVersion {
		return cp, fmt.Errorf("%w: format version %d, this build reads %d", ErrCorrupt, v, formatVersion)
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

// Store keeps checkpoints under PREFIX/TOPIC/pNNNNN/oOFFSET.ckpt; the zero-padded offset makes
// key order offset order, so the newest is the last key.
type Store struct {
	obj    *objstore.Store
	prefix string
	keep   int
	log    *slog.Logger
}

// NewStore keeps the newest keep (at least 2, so a corrupt newest one has a predecessor)
// checkpoints per partition under prefix (default "checkpoints").
func NewStore(obj *objstore.Store, prefix string, keep int, log *slog.Logger) *Store {
	if prefix == "" {
		prefix = "checkpoints"
	}
	if keep < 2 {
		keep = 2
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{obj: obj, prefix: strings.TrimSuffix(prefix, "/"), keep: keep, log: log}
}

func (s *Store) dir(topic string, partition int) string {
	return fmt.Sprintf("%s/%s/p%05d/", s.prefix, topic, partition)
}

// Key returns the object key of a checkpoint.
func (s *Store) Key(cp Checkpoint) string {
	return fmt.Sprintf("%so%019d.ckpt", s.dir(cp.Topic, cp.Partition), cp.Offset)
}

// Save writes the checkpoint and then prunes the oldest beyond keep. A failed prune is
// logged, not returned: the checkpoint itself is safe.
func (s *Store) Save(ctx context.Context, cp Checkpoint) (string, error) {
	key := s.Key(cp)
	if _, err := s.obj.Put(ctx, key, Encode(cp)); err != nil {
		return "", fmt.Errorf("save checkpoint %s: %w", key, err)
	}
	if err := s.prune(ctx, cp.Topic, cp.Partition); err != nil {
		s.log.Warn("prune checkpoints", "topic", cp.Topic, "partition", cp.Partition, "err", err)
	}
	return key, nil
}

func (s *Store) list(ctx context.Context, topic string, partition int) ([]string, error) {
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

func (s *Store) prune(ctx context.Context, topic string, partition int) error {
	keys, err := s.list(ctx, topic, partition)
	if err != nil || len(keys) <= s.keep {
		return err
	}
	return s.obj.Delete(ctx, keys[:len(keys)-s.keep]...)
}

// Load returns the newest valid checkpoint of a partition, skipping corrupt ones (and those
// that valid reports bad, e.g. a state from an incompatible window configuration) with a
// warning. found is false when there is none: start from the beginning of the log.
func (s *Store) Load(ctx context.Context, topic string, partition int, valid func(Checkpoint) error) (cp Checkpoint, found bool, err error) {
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
		if err == nil && valid != nil {
			err = valid(c)
		}
		if err != nil {
			s.log.Warn("skipping unusable checkpoint; trying the previous one", "key", keys[i], "err", err)
			continue
		}
		return c, true, nil
	}
	return cp, false, nil
}
