package topics

import (
	"trending/model/topicrules"

	"errors"
	"time"

	"trending/speed/sketch"
)

// Dedupe defaults.
const (
	// DefaultDedupeCapacity is 2^19 pairs, 4 MiB: the live set at the peak is 244,000
	// pairs (271 events a second for 15 minutes), so the table runs under half full at the
	// peak and its 8-way buckets almost never evict a live pair.
	DefaultDedupeCapacity = 1 << 19
	// dedupeWays is the bucket size: a pair lives in one of 8 adjacent slots, one cache line.
	dedupeWays = 8
	// dedupeSeed seeds the pair hash; it is part of the snapshot format.
	dedupeSeed = 0x7d0b1c5e
)

// DedupeConfig sizes a Dedupe. Start from DefaultDedupeConfig: a zero field means zero,
// and both must be positive.
type DedupeConfig struct {
	// Capacity is the number of pairs held, a power of two >= 8 (default
	// DefaultDedupeCapacity, 2^19, 4 MiB). Memory is Capacity x 8 bytes and never grows.
	Capacity int
	// TTL is how long a pair suppresses repeats, whole minutes from 1 minute to 24 hours
	// (default topicrules.DefaultDedupeTTL, 15 minutes).
	TTL time.Duration
}

// DefaultDedupeConfig returns the defaults: 2^19 pairs for 15 minutes.
func DefaultDedupeConfig() DedupeConfig {
	return DedupeConfig{Capacity: DefaultDedupeCapacity, TTL: topicrules.DefaultDedupeTTL}
}

// Validate reports whether c can build a Dedupe; every error wraps topicrules.ErrConfig and
// setting.ErrConfig and names the field (Capacity, TTL).
func (c DedupeConfig) Validate() error {
	var errs []error
	if c.Capacity < dedupeWays || c.Capacity&(c.Capacity-1) != 0 || c.Capacity > 1<<28 {
		errs = append(errs, invalid("Capacity", "%d must be a power of two from %d to 2^28 (default %d)", c.Capacity, dedupeWays, DefaultDedupeCapacity))
	}
	if c.TTL < time.Minute || c.TTL > 24*time.Hour || c.TTL%time.Minute != 0 {
		errs = append(errs, invalid("TTL", "%v must be whole minutes from 1m to 24h (default %v)", c.TTL, topicrules.DefaultDedupeTTL))
	}
	return errors.Join(errs...)
}

// Dedupe remembers hashed (user, topic) pairs so that a user counts once per topic per TTL.
// It is a fixed table of Capacity 8-byte entries, each a 48-bit fingerprint of the pair and
// the 16-bit minute it was last counted, in buckets of 8: a pair is looked up in one bucket,
// and a new pair takes an empty or expired slot there, or else evicts the bucket's oldest
// entry. Memory is fixed whatever the traffic: a flood of distinct pairs evicts older pairs
// (so a repeat of an evicted pair counts again, which Stats reports), it never grows the
// table. A user has one region, so one pair covers the regional and the worldwide key.
//
// Minutes are stored modulo 2^16 (45 days); an entry untouched that long could look fresh,
// which at 15-minute TTLs and a table that turns over in hours does not happen in practice.
// A Dedupe is not safe for concurrent use.
type Dedupe struct {
	slots   []uint64
	buckets uint64 // number of buckets - 1, a mask
	ttl     uint16 // minutes
	stats   DedupeStats
}

// DedupeStats counts what a Dedupe decided.
type DedupeStats struct {
	Counted    uint64 // first mentions of a pair within the TTL
	Duplicates uint64 // repeats suppressed
	Evicted    uint64 // live pairs pushed out by a full bucket (their repeats count again)
}

// NewDedupe returns an empty table, or an error wrapping topicrules.ErrConfig.
func NewDedupe(cfg DedupeConfig) (*Dedupe, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Dedupe{
		slots:   make([]uint64, cfg.Capacity),
		buckets: uint64(cfg.Capacity/dedupeWays - 1),
		ttl:     uint16(cfg.TTL / time.Minute),
	}, nil
}

// PairHash is the hash of a (user, topic) pair, without allocating.
func PairHash(user, topic string) uint64 {
	return sketch.KeyHashString(sketch.KeyHashString(dedupeSeed, user), topic)
}

// Bytes returns the table's memory, fixed at construction.
func (d *Dedupe) Bytes() int { return len(d.slots) * 8 }

// Stats returns the counts so far.
func (d *Dedupe) Stats() DedupeStats { return d.stats }

// First reports whether the pair with hash h counts at minute (Unix minutes): true the
// first time within the TTL, false for a repeat. A mention older than the pair's last
// counted minute (a late event) is a repeat, so replay never counts a pair twice.
func (d *Dedupe) First(h uint64, minute int64) bool {
	fp := h >> 16
	if fp == 0 {
		fp = 1 // 0 marks an empty slot
	}
	now := uint16(minute)
	b := d.slots[(h&d.buckets)*dedupeWays:][:dedupeWays]
	free, oldest := -1, 0
	var oldestAge uint16
	for i, e := range b {
		if e == 0 {
			if free < 0 {
				free = i
			}
			continue
		}
		age := now - uint16(e)
		live := age < d.ttl || age >= 1<<15 // a "negative" age is a late event: still live
		if e>>16 == fp {
			if live {
				d.stats.Duplicates++
				return false
			}
			b[i] = fp<<16 | uint64(now)
			d.stats.Counted++
			return true
		}
		if !live {
			if free < 0 {
				free = i
			}
		} else if age < 1<<15 && age >= oldestAge {
			oldest, oldestAge = i, age
		}
	}
	if free < 0 {
		free = oldest
		d.stats.Evicted++
	}
	b[free] = fp<<16 | uint64(now)
	d.stats.Counted++
	return true
}

// Len returns the number of occupied slots (live or expired), for tests and metrics.
func (d *Dedupe) Len() int {
	n := 0
	for _, e := range d.slots {
		if e != 0 {
			n++
		}
	}
	return n
}
