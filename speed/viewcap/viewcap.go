// Package viewcap bounds what one account (or device) adds to an item: at most Views views per
// (account, item, UTC hour of event time), the speed layer's side of the per-account caps
// (docs/moderation.md#per-account-caps). The batch applies the same rule as
// sum(least(views of the (item, account, hour), N)) over the archive, so the exact lists stay
// the truth of the capped stream.
//
// A Table is a fixed-size open-addressing table of (account, item, hour) -> views admitted so
// far: its memory is fixed at construction (Slots x 16 bytes, sized by `trending plan`). An
// event whose key finds no slot within MaxProbe (the table is full of the hours still
// countable) is admitted uncapped and counted in Full: the bound costs accuracy of the cap,
// never an event. Slots of hours before the newest hour minus KeepHours are reused.
//
// In detail (DESIGN.md's file map has the line): per-account caps' table
// (docs/moderation.md (docs/moderation.md#per-account-caps)): at most N views per
// (account, item, UTC hour) admitted (`Admit`), fixed-size open addressing of 16-byte
// slots (`--cap-slots`, sized by `trending plan --cap-pairs`), hours older than the newest
// minus `KeepHours` reused; at the bound (no slot within 32 probes) or for older events
// the event is admitted uncapped and counted (`Full`, `Late`); a checksummed snapshot of
// every occupied slot, in the checkpoint bundle (version 4). The worker
// (`speed/worker.Config.Cap`) admits each event with a `user_id` through it, a region's
// list by (account, region + item); the batch's `Config.CapViews` sums `least(c, N)` per
// (item, account, hour) in both engines
package viewcap

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/bits"

	"github.com/zeebo/xxh3"
)

// MaxProbe is how many slots a key may look at before the table counts as full for it.
const MaxProbe = 32

// SlotBytes is the memory of one slot.
const SlotBytes = 16

// Config configures a Table.
type Config struct {
	// Views is the cap N: one account adds at most this many views to an item per hour. 0
	// turns caps off (New returns nil).
	Views uint32
	// Slots is the table's size, rounded up to a power of two; at least 1024. Memory is
	// Slots x SlotBytes.
	Slots int
	// KeepHours is how many hours before the newest one a slot is kept: events that late
	// are still capped exactly. Cover the allowed lateness: 1 for a lateness under an hour.
	KeepHours int
}

// Reasons an event was admitted uncapped (metric labels).
const (
	ReasonFull = "full"
	ReasonLate = "late"
)

// ErrCorrupt means a snapshot's bytes are not a table this build reads.
var ErrCorrupt = errors.New("viewcap: corrupt snapshot")

type slot struct {
	key  uint64 // hash of (account, item); 0 marks an empty slot (a zero hash is stored as 1)
	hour int32  // hours since the Unix epoch
	used uint32 // views admitted
}

// Table is one partition's cap state. It is not safe for concurrent use: the partition's
// goroutine owns it, as it owns the window state.
type Table struct {
	cfg    Config
	slots  []slot
	mask   uint64
	newest int32
	// Capped counts the views refused by the cap; Full the events admitted uncapped because
	// no slot was free; Late those admitted uncapped because their hour is older than the
	// newest minus KeepHours. All only grow.
	Capped, Full, Late uint64
}

// New returns a Table, or nil when cfg.Views is 0 (caps off).
func New(cfg Config) (*Table, error) {
	if cfg.Views == 0 {
		return nil, nil
	}
	if cfg.Slots < 1024 {
		return nil, fmt.Errorf("viewcap: %d slots: use at least 1024", cfg.Slots)
	}
	if cfg.KeepHours < 0 {
		return nil, fmt.Errorf("viewcap: keep hours %d: must not be negative", cfg.KeepHours)
	}
	n := uint64(1) << bits.Len64(uint64(cfg.Slots-1))
	cfg.Slots = int(n)
	return &Table{cfg: cfg, slots: make([]slot, n), mask: n - 1}, nil
}

// Config returns the table's configuration (Slots rounded up).
func (t *Table) Config() Config { return t.cfg }

func keyOf(account, item []byte) uint64 {
	h := xxh3.Hash(account)
	k := xxh3.HashSeed(item, h)
	if k == 0 {
		k = 1
	}
	return k
}

// Admit records count views of item by account at event time tsMilli and returns how many
// count: count while the account's views of the item in that hour stay within the cap, then
// what is left of it, then 0. An empty account is never capped.
func (t *Table) Admit(account, item []byte, tsMilli int64, count uint32) uint32 {
	if len(account) == 0 {
		return count
	}
	hour := int32(floorDiv(tsMilli, 3_600_000))
	if hour > t.newest {
		t.newest = hour
	}
	oldest := t.newest - int32(t.cfg.KeepHours)
	if hour < oldest {
		// Later than the kept hours: its slot may be gone, so it is admitted uncapped
		// rather than capped afresh (counted: the speed layer may then list more than the
		// batch's capped truth).
		t.Late++
		return count
	}
	key := keyOf(account, item)
	i := key & t.mask
	free := -1
	for range MaxProbe {
		s := &t.slots[i]
		switch {
		case s.key == key && s.hour == hour:
			return t.take(s, count)
		case s.key == 0 || s.hour < oldest:
			if free < 0 {
				free = int(i)
			}
			if s.key == 0 {
				i = t.mask + 1 // nothing further along this probe sequence was ever stored
			}
		}
		if i > t.mask {
			break
		}
		i = (i + 1) & t.mask
	}
	if free < 0 {
		t.Full++
		return count
	}
	s := &t.slots[free]
	*s = slot{key: key, hour: hour}
	return t.take(s, count)
}

func (t *Table) take(s *slot, count uint32) uint32 {
	left := t.cfg.Views - min(s.used, t.cfg.Views)
	got := min(count, left)
	s.used += got
	t.Capped += uint64(count - got)
	return got
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// Clone returns a copy of t: a checkpoint copies the table under the partition's lock (one
// copy of the slots) and encodes the copy without it.
func (t *Table) Clone() *Table {
	c := *t
	c.slots = append([]slot(nil), t.slots...)
	return &c
}

// Len is how many slots hold a key of an hour still kept.
func (t *Table) Len() int {
	n := 0
	oldest := t.newest - int32(t.cfg.KeepHours)
	for _, s := range t.slots {
		if s.key != 0 && s.hour >= oldest {
			n++
		}
	}
	return n
}

const snapMagic = "TCAP"

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MarshalBinary encodes the occupied slots: "TCAP", version 1, the cap, the slots (a power of
// two), keep hours, the newest hour, the counters (capped, full, late), the slot count, then
// (index, key, hour, used) per slot, and a CRC-32 (Castagnoli) of all before it.
func (t *Table) MarshalBinary() ([]byte, error) {
	used := 0
	for i := range t.slots {
		if t.slots[i].key != 0 {
			used++
		}
	}
	// One allocation: a slot takes at most 10 + 8 + 5 + 5 bytes.
	out := make([]byte, 0, 64+used*28)
	out = append(out, snapMagic...)
	out = append(out, 1)
	out = binary.AppendUvarint(out, uint64(t.cfg.Views))
	out = binary.AppendUvarint(out, uint64(t.cfg.Slots))
	out = binary.AppendUvarint(out, uint64(t.cfg.KeepHours))
	out = binary.AppendVarint(out, int64(t.newest))
	out = binary.AppendUvarint(out, t.Capped)
	out = binary.AppendUvarint(out, t.Full)
	out = binary.AppendUvarint(out, t.Late)
	// Every occupied slot, expired ones too: they are links of probe sequences, and a
	// restore that emptied them would cut a key off from its sequence.
	out = binary.AppendUvarint(out, uint64(used))
	for i, s := range t.slots {
		if s.key == 0 {
			continue
		}
		out = binary.AppendUvarint(out, uint64(i))
		out = binary.LittleEndian.AppendUint64(out, s.key)
		out = binary.AppendVarint(out, int64(s.hour))
		out = binary.AppendUvarint(out, uint64(s.used))
	}
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli)), nil
}

// UnmarshalBinary restores a table encoded by MarshalBinary; the cap, the slots and keep
// hours must be t's (a restore under other settings is refused: counting afresh would admit
// what the old cap refused).
func (t *Table) UnmarshalBinary(b []byte) error {
	if len(b) < len(snapMagic)+5 || string(b[:4]) != snapMagic || b[4] != 1 {
		return fmt.Errorf("%w: bad header", ErrCorrupt)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return fmt.Errorf("%w: checksum", ErrCorrupt)
	}
	r := body[5:]
	var bad bool
	u := func() uint64 {
		v, n := binary.Uvarint(r)
		if n <= 0 {
			bad = true
			return 0
		}
		r = r[n:]
		return v
	}
	v := func() int64 {
		x, n := binary.Varint(r)
		if n <= 0 {
			bad = true
			return 0
		}
		r = r[n:]
		return x
	}
	views, slots, keep := u(), u(), u()
	if !bad && (views != uint64(t.cfg.Views) || slots != uint64(t.cfg.Slots) || keep != uint64(t.cfg.KeepHours)) {
		return fmt.Errorf("viewcap: snapshot taken with a cap of %d views, %d slots, %d hours kept; this table has %d, %d, %d: keep the old settings, or drop the checkpoint",
			views, slots, keep, t.cfg.Views, t.cfg.Slots, t.cfg.KeepHours)
	}
	newest, capped, full, late, n := v(), u(), u(), u(), u()
	if bad || n > slots {
		return fmt.Errorf("%w: truncated", ErrCorrupt)
	}
	fresh := make([]slot, len(t.slots))
	for range n {
		i := u()
		if len(r) < 8 || i >= slots {
			return fmt.Errorf("%w: truncated slot", ErrCorrupt)
		}
		key := binary.LittleEndian.Uint64(r)
		r = r[8:]
		hour, used := v(), u()
		if bad {
			return fmt.Errorf("%w: truncated slot", ErrCorrupt)
		}
		fresh[i] = slot{key: key, hour: int32(hour), used: uint32(used)}
	}
	if len(r) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrCorrupt, len(r))
	}
	t.slots, t.newest, t.Capped, t.Full, t.Late = fresh, int32(newest), capped, full, late
	return nil
}
