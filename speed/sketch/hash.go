package sketch

import "math/bits"

// The sketch hashes every key once with XXH64 (the 64-bit xxHash of Yann
// Collet, spec: https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md)
// seeded with Config.Seed, and derives the d column indexes from that one
// 64-bit value by Kirsch–Mitzenmacher double hashing with a quadratic term
// (triple hashing):
//
//	h      = XXH64(key, seed)
//	h1     = uint32(h)                                  // low 32 bits
//	h2     = uint32(h >> 32)                            // high 32 bits
//	h3     = uint32(((h ^ (h >> 29)) * 0xBF58476D1CE4E5B9) >> 32)
//	col(i) = (h1 + i*h2 + i*i*h3) mod 2^32 mod width,   i = 0 .. depth-1
//
// Width is a power of two, so "mod width" is a mask of the low bits.
//
// Why the quadratic term: with plain h1 + i*h2, two keys whose h1 and h2
// agree modulo width collide in every row (probability 1/width^2 per pair,
// not 1/width^depth). Such a key is a ghost: it carries a heavy hitter's full
// count into the top-K candidates. Measured at 4 x 1024 on a Zipf stream, the
// worst overcount was a never-seen key sitting exactly on the top item
// (55,155 over a true 0). At the default 2^18 columns that is 1.5e-11 per
// pair, about 0.7 ghosts of a top-100 video per month over 32 partitions of
// 15.6M keys. With h3 the rows agree only if three 32-bit differences vanish
// modulo width (about 2/width^3, 2^-53 at the default width).
//
// The hash is written here rather than taken from hash/maphash because maphash
// seeds are per process: sketches are checkpointed to S3 and merged across
// machines and versions, so the cell a key lands in is part of the on-disk
// format (docs/format/sketch.md) and must never change. TestHashGolden and
// TestColumnsGolden pin it.

const (
	prime1 uint64 = 0x9E3779B185EBCA87
	prime2 uint64 = 0xC2B2AE3D27D4EB4F
	prime3 uint64 = 0x165667B19E3779F9
	prime4 uint64 = 0x85EBCA77C2B2AE63
	prime5 uint64 = 0x27D4EB2F165667C5
)

// mix3 is the multiplier of h3: splitmix64's second constant.
const mix3 uint64 = 0xBF58476D1CE4E5B9

// probe returns the state that walks col(i) for i = 0, 1, ... by additions
// only: col(0) = h1, col(i+1) = col(i) + step(i), step(0) = h2 + h3 and
// step(i+1) = step(i) + 2*h3, which is h1 + i*h2 + i*i*h3 modulo 2^32.
func probe(h uint64) (col, step, step2 uint32) {
	h1, h2 := uint32(h), uint32(h>>32)
	h3 := uint32(((h ^ h>>29) * mix3) >> 32)
	return h1, h2 + h3, 2 * h3
}

// bytesOrString lets one hash body serve Add and AddString without
// converting a string to a []byte (which may allocate) and without unsafe.
type bytesOrString interface{ ~string | ~[]byte }

// xxh64 is XXH64 of p with the given seed, bit-exact with the reference
// implementation.
func xxh64[T bytesOrString](p T, seed uint64) uint64 {
	n := len(p)
	var h uint64
	i := 0
	if n >= 32 {
		v1 := seed + prime1 + prime2
		v2 := seed + prime2
		v3 := seed
		v4 := seed - prime1
		for ; i+32 <= n; i += 32 {
			v1 = round(v1, le64(p, i))
			v2 = round(v2, le64(p, i+8))
			v3 = round(v3, le64(p, i+16))
			v4 = round(v4, le64(p, i+24))
		}
		h = bits.RotateLeft64(v1, 1) + bits.RotateLeft64(v2, 7) +
			bits.RotateLeft64(v3, 12) + bits.RotateLeft64(v4, 18)
		h = mergeRound(h, v1)
		h = mergeRound(h, v2)
		h = mergeRound(h, v3)
		h = mergeRound(h, v4)
	} else {
		h = seed + prime5
	}
	h += uint64(n)
	for ; i+8 <= n; i += 8 {
		h ^= round(0, le64(p, i))
		h = bits.RotateLeft64(h, 27)*prime1 + prime4
	}
	if i+4 <= n {
		h ^= uint64(le32(p, i)) * prime1
		h = bits.RotateLeft64(h, 23)*prime2 + prime3
		i += 4
	}
	for ; i < n; i++ {
		h ^= uint64(p[i]) * prime5
		h = bits.RotateLeft64(h, 11) * prime1
	}
	h ^= h >> 33
	h *= prime2
	h ^= h >> 29
	h *= prime3
	h ^= h >> 32
	return h
}

func round(acc, lane uint64) uint64 {
	acc += lane * prime2
	acc = bits.RotateLeft64(acc, 31)
	return acc * prime1
}

func mergeRound(acc, v uint64) uint64 {
	acc ^= round(0, v)
	return acc*prime1 + prime4
}

// le64 reads 8 little-endian bytes at i; the compiler fuses the shifts into
// one load.
func le64[T bytesOrString](p T, i int) uint64 {
	p = p[i : i+8]
	return uint64(p[0]) | uint64(p[1])<<8 | uint64(p[2])<<16 | uint64(p[3])<<24 |
		uint64(p[4])<<32 | uint64(p[5])<<40 | uint64(p[6])<<48 | uint64(p[7])<<56
}

func le32[T bytesOrString](p T, i int) uint32 {
	p = p[i : i+4]
	return uint32(p[0]) | uint32(p[1])<<8 | uint32(p[2])<<16 | uint32(p[3])<<24
}
