package sketch

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
// serial multiply chain per tail byte: 3.2 ns against 8-10 ns on an
// 11-byte key (BenchmarkHash), which was a third of Add's time.
//
// XXH3 is github.com/zeebo/xxh3 (HashSeed for []byte, HashStringSeed for
// string, neither allocates). It replaced a hand-written XXH3 (issue 20):
// the outputs are bit-identical (checked on every length 0..300 and around
// the 1024-byte block, random bytes, ten seeds, before the switch), and
// measured in one run, interleaved, it ties on 11-byte ids (4.0 ns both),
// ties on Add at 2^18 x 5, and is 2.2x, 3x and 5x faster at 32, 100 and 1000
// bytes (BENCHMARKS.md). Its seeds are explicit, unlike hash/maphash's
// per-process ones, which matters because sketches are checkpointed to S3
// and merged across machines and versions: the cell a key lands in is part
// of the on-disk format (docs/format/sketch.md) and must never change.
// TestHashGolden (the reference implementation's values), TestHashDigest
// (every length 0..2100) and TestColumnsGolden pin it, so a library upgrade
// that changed a hash would fail them.
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

const mix3 = 0xBF58476D1CE4E5B9 // splitmix64's second constant, for h3

// probe returns the state that walks col(i) for i = 0, 1, ... by additions
// only: col(0) = h1, col(i+1) = col(i) + step(i), step(0) = h2 + h3 and
// step(i+1) = step(i) + 2*h3, which is h1 + i*h2 + i*i*h3 modulo 2^32.
func probe(h uint64) (col, step, step2 uint32) {
	h1, h2 := uint32(h), uint32(h>>32)
	h3 := uint32(((h ^ h>>29) * mix3) >> 32)
	return h1, h2 + h3, 2 * h3
}
