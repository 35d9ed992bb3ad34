package plan

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Byte units. Plans print decimal units, as docs/requirements.md does (7.5 GB is 7.5e9 bytes); budgets
// may be given in either, because machine memory is sold in binary units.
const (
	KB  = 1e3
	MB  = 1e6
	GB  = 1e9
	TB  = 1e12
	KiB = 1 << 10
	MiB = 1 << 20
	GiB = 1 << 30
	TiB = 1 << 40
)

var byteUnits = map[string]float64{
	"b": 1, "kb": KB, "mb": MB, "gb": GB, "tb": TB,
	"kib": KiB, "mib": MiB, "gib": GiB, "tib": TiB,
}

// ParseBytes reads a size such as "2GiB", "1.5 GB", "512MiB", "2e9" or "2147483648". A plain
// number is bytes. Bare "G" or "M" are refused: whether they mean 10^9 or 2^30 differs from
// tool to tool, and a capacity plan should not guess.
func ParseBytes(s string) (float64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && isLetter(t[i-1]) {
		i--
	}
	num, unit := strings.TrimSpace(t[:i]), strings.ToLower(t[i:])
	mult := 1.0
	if unit != "" {
		m, ok := byteUnits[unit]
		if !ok {
			return 0, fmt.Errorf("size %q: unknown unit %q: use B, kB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)", s, t[i:])
		}
		mult = m
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("size %q: want a number of bytes with an optional unit, such as 2GiB, 1.5GB or 2e9", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("size %q: must not be negative", s)
	}
	return v * mult, nil
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// FormatBytes prints b in decimal units with three significant digits, trailing zeros
// dropped, the way docs/requirements.md writes sizes: 7.5 GB, 43.5 GB, 10.5 MB, 1.36 GB, 234 MB.
func FormatBytes(b float64) string {
	units := []struct {
		name string
		size float64
	}{{"PB", 1000 * TB}, {"TB", TB}, {"GB", GB}, {"MB", MB}, {"kB", KB}}
	for i, u := range units {
		if math.Abs(b) >= u.size {
			s := sig3(b / u.size)
			// 999.7 MB rounds to "1000"; show it as 1 GB instead.
			if s == "1000" && i > 0 {
				return "1 " + units[i-1].name
			}
			return s + " " + u.name
		}
	}
	return sig3(b) + " B"
}

// FormatSize prints a budget: in binary units when it is a round number of them, to two
// decimals (2 GiB, 1.5 GiB, as the user most likely wrote it), else as FormatBytes does.
func FormatSize(b float64) string {
	for _, u := range []struct {
		name string
		size float64
	}{{"TiB", TiB}, {"GiB", GiB}, {"MiB", MiB}} {
		if b >= u.size && math.Mod(b*100, u.size) == 0 {
			return strconv.FormatFloat(b/u.size, 'f', -1, 64) + " " + u.name
		}
	}
	return FormatBytes(b)
}

// sig3 formats v (below 1000 in magnitude) with three significant digits, no exponent.
func sig3(v float64) string {
	dec := 0
	switch a := math.Abs(v); {
	case a < 10:
		dec = 2
	case a < 100:
		dec = 1
	}
	s := strconv.FormatFloat(v, 'f', dec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// FormatCount prints a count rounded to a whole number with thousands separators:
// 48,607 or 4,687,500,000.
func FormatCount(v float64) string {
	s := strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// FormatPercent prints a fraction as a percentage with three significant digits: 99.3%, 4.86%.
func FormatPercent(f float64) string { return sig3(f*100) + "%" }
