package sketch

import (
	"encoding/binary"
	"math/bits"
)

// The sketch hashes every key once with XXH3-64 (XXH3_64bits_withSeed of
// xxHash 0.8, Yann Collet; spec:
// https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md) seeded with
// Config.Seed, and derives the d column indexes from that one 64-bit value by
// Kirsch–Mitzenmacher double hashing with a quadratic term (triple hashing):
//
//	h      = XXH3_64bits_withSeed(key, seed)
//	h1     = uint32(h)                                  // low 32 bits
//	h2     = uint32(h >> 32)                            // high 32 bits
//	h3     = uint32(((h ^ (h >> 29)) * 0xBF58476D1CE4E5B9) >> 32)
//	col(i) = (h1 + i*h2 + i*i*h3) mod 2^32 mod width,   i = 0 .. depth-1
//
// Width is a power of two, so "mod width" is a mask of the low bits.
//
// Why XXH3 and not XXH64: on the 1-16 byte keys of real item ids XXH3 is two
// loads, one 64x64->128 multiply and a short avalanche, against XXH64's
// serial multiply chain per tail byte: 3.2 ns against 8-10 ns on an 11-byte
// key (BenchmarkHash), which was a third of Add's time.
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
	prime32_1 uint64 = 0x9E3779B1
	prime32_2 uint64 = 0x85EBCA77
	prime32_3 uint64 = 0xC2B2AE3D
	prime64_1 uint64 = 0x9E3779B185EBCA87
	prime64_2 uint64 = 0xC2B2AE3D27D4EB4F
	prime64_3 uint64 = 0x165667B19E3779F9
	prime64_4 uint64 = 0x85EBCA77C2B2AE63
	prime64_5 uint64 = 0x27D4EB2F165667C5

	secretSize  = 192
	stripeLen   = 64
	blockLen    = stripeLen * ((secretSize - stripeLen) / 8) // 1024
	avalanche3m = 0x165667919E3779F9
	rrmxmxm     = 0x9FB21C651E98DF25
	mix3        = 0xBF58476D1CE4E5B9 // splitmix64's second constant, for h3
)

// kSecret is XXH3's default 192-byte secret.
var kSecret = [secretSize]byte{
	0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
	0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb, 0x72, 0x40, 0xa4, 0xa4, 0xb7, 0xb3, 0x67, 0x1f,
	0xcb, 0x79, 0xe6, 0x4e, 0xcc, 0xc0, 0xe5, 0x78, 0x82, 0x5a, 0xd0, 0x7d, 0xcc, 0xff, 0x72, 0x21,
	0xb8, 0x08, 0x46, 0x74, 0xf7, 0x43, 0x24, 0x8e, 0xe0, 0x35, 0x90, 0xe6, 0x81, 0x3a, 0x26, 0x4c,
	0x3c, 0x28, 0x52, 0xbb, 0x91, 0xc3, 0x00, 0xcb, 0x88, 0xd0, 0x65, 0x8b, 0x1b, 0x53, 0x2e, 0xa3,
	0x71, 0x64, 0x48, 0x97, 0xa2, 0x0d, 0xf9, 0x4e, 0x38, 0x19, 0xef, 0x46, 0xa9, 0xde, 0xac, 0xd8,
	0xa8, 0xfa, 0x76, 0x3f, 0xe3, 0x9c, 0x34, 0x3f, 0xf9, 0xdc, 0xbb, 0xc7, 0xc7, 0x0b, 0x4f, 0x1d,
	0x8a, 0x51, 0xe0, 0x4b, 0xcd, 0xb4, 0x59, 0x31, 0xc8, 0x9f, 0x7e, 0xc9, 0xd9, 0x78, 0x73, 0x64,
	0xea, 0xc5, 0xac, 0x83, 0x34, 0xd3, 0xeb, 0xc3, 0xc5, 0x81, 0xa0, 0xff, 0xfa, 0x13, 0x63, 0xeb,
	0x17, 0x0d, 0xdd, 0x51, 0xb7, 0xf0, 0xda, 0x49, 0xd3, 0x16, 0x55, 0x26, 0x29, 0xd4, 0x68, 0x9e,
	0x2b, 0x16, 0xbe, 0x58, 0x7d, 0x47, 0xa1, 0xfc, 0x8f, 0xf8, 0xb8, 0xd1, 0x7a, 0xd0, 0x31, 0xce,
	0x45, 0xcb, 0x3a, 0x8f, 0x95, 0x16, 0x04, 0x28, 0xaf, 0xd7, 0xfb, 0xca, 0xbb, 0x4b, 0x40, 0x7e,
}

// Words of the default secret at the offsets the short paths use.
var (
	sec0_4   = uint64(binary.LittleEndian.Uint32(kSecret[0:]) ^ binary.LittleEndian.Uint32(kSecret[4:]))
	sec8_16  = sec(8) ^ sec(16)
	sec24_32 = sec(24) ^ sec(32)
	sec40_48 = sec(40) ^ sec(48)
	sec56_64 = sec(56) ^ sec(64)
)

func sec(i int) uint64 { return binary.LittleEndian.Uint64(kSecret[i:]) }

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

// xxh3 is XXH3_64bits_withSeed(p, seed), bit-exact with the reference
// implementation (TestHashGolden).
func xxh3[T bytesOrString](p T, seed uint64) uint64 {
	n := len(p)
	switch {
	case n > 16:
		return xxh3Long(p, seed)
	case n > 8:
		lo := le64(p, 0) ^ (sec24_32 + seed)
		hi := le64(p, n-8) ^ (sec40_48 - seed)
		return avalanche3(uint64(n) + bits.ReverseBytes64(lo) + hi + mulFold64(lo, hi))
	case n >= 4:
		seed ^= uint64(bits.ReverseBytes32(uint32(seed))) << 32
		x := (uint64(le32(p, n-4)) + uint64(le32(p, 0))<<32) ^ (sec8_16 - seed)
		x ^= bits.RotateLeft64(x, 49) ^ bits.RotateLeft64(x, 24)
		x *= rrmxmxm
		x ^= (x >> 35) + uint64(n)
		x *= rrmxmxm
		return x ^ x>>28
	case n > 0:
		combined := uint64(p[0])<<16 | uint64(p[n>>1])<<24 | uint64(p[n-1]) | uint64(n)<<8
		return avalanche64(combined ^ (sec0_4 + seed))
	default:
		return avalanche64(seed ^ sec56_64)
	}
}

// xxh3Long is XXH3 for inputs over 16 bytes, out of line so that the short
// paths real keys take stay small.
func xxh3Long[T bytesOrString](p T, seed uint64) uint64 {
	n := len(p)
	acc := uint64(n) * prime64_1
	mix := func(i, s int) uint64 {
		return mulFold64(le64(p, i)^(sec(s)+seed), le64(p, i+8)^(sec(s+8)-seed))
	}
	switch {
	case n <= 128:
		if n > 32 {
			if n > 64 {
				if n > 96 {
					acc += mix(48, 96) + mix(n-64, 112)
				}
				acc += mix(32, 64) + mix(n-48, 80)
			}
			acc += mix(16, 32) + mix(n-32, 48)
		}
		acc += mix(0, 0) + mix(n-16, 16)
		return avalanche3(acc)
	case n <= 240:
		for i := range 8 {
			acc += mix(16*i, 16*i)
		}
		acc = avalanche3(acc)
		for i := 8; i < n/16; i++ {
			acc += mix(16*i, 16*(i-8)+3)
		}
		acc += mix(n-16, 136-17) // XXH3_SECRET_SIZE_MIN - XXH3_MIDSIZE_LASTOFFSET
		return avalanche3(acc)
	}
	// Over 240 bytes: 8 accumulators over 64-byte stripes, scrambled after
	// every 1024-byte block, keyed by a secret derived from the seed.
	secret := kSecret
	if seed != 0 {
		for i := 0; i < secretSize; i += 16 {
			binary.LittleEndian.PutUint64(secret[i:], sec(i)+seed)
			binary.LittleEndian.PutUint64(secret[i+8:], sec(i+8)-seed)
		}
	}
	accs := [8]uint64{prime32_3, prime64_1, prime64_2, prime64_3, prime64_4, prime32_2, prime64_5, prime32_1}
	accumulate := func(off, soff int) {
		for i := range 8 {
			v := le64(p, off+8*i)
			k := v ^ binary.LittleEndian.Uint64(secret[soff+8*i:])
			accs[i^1] += v
			accs[i] += uint64(uint32(k)) * (k >> 32)
		}
	}
	blocks := (n - 1) / blockLen
	for b := range blocks {
		for s := range blockLen / stripeLen {
			accumulate(b*blockLen+s*stripeLen, s*8)
		}
		for i := range accs {
			a := accs[i]
			a ^= a >> 47
			a ^= binary.LittleEndian.Uint64(secret[secretSize-stripeLen+8*i:])
			accs[i] = a * prime32_1
		}
	}
	for s := range ((n - 1) - blocks*blockLen) / stripeLen {
		accumulate(blocks*blockLen+s*stripeLen, s*8)
	}
	accumulate(n-stripeLen, secretSize-stripeLen-7)
	for i := range 4 {
		acc += mulFold64(accs[2*i]^binary.LittleEndian.Uint64(secret[11+16*i:]),
			accs[2*i+1]^binary.LittleEndian.Uint64(secret[11+16*i+8:]))
	}
	return avalanche3(acc)
}

func mulFold64(x, y uint64) uint64 {
	hi, lo := bits.Mul64(x, y)
	return hi ^ lo
}

func avalanche3(x uint64) uint64 {
	x ^= x >> 37
	x *= avalanche3m
	return x ^ x>>32
}

func avalanche64(x uint64) uint64 {
	x ^= x >> 33
	x *= prime64_2
	x ^= x >> 29
	x *= prime64_3
	return x ^ x>>32
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
