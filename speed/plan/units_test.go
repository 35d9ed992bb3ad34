package plan

import (
	"math"
	"strings"
	"testing"
)

func TestParseBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		want float64
		err  string
	}{
		{"2GiB", 2 * GiB, ""},
		{"2 GiB", 2 * GiB, ""},
		{"2gib", 2 * GiB, ""},
		{"1.5GB", 1.5e9, ""},
		{"512MiB", 512 * MiB, ""},
		{"100 GB", 100e9, ""},
		{"2e9", 2e9, ""},
		{"2e+09", 2e9, ""},
		{"1e3kB", 1e6, ""},
		{"2147483648", 2 * GiB, ""},
		{" 7 TB ", 7e12, ""},
		{"0", 0, ""},
		{"2G", 0, "unknown unit"},
		{"2 bananas", 0, "unknown unit"},
		{"", 0, "want a number"},
		{"GiB", 0, "want a number"},
		{"-1GB", 0, "negative"},
		{"inf", 0, "unknown unit"},
		{"1e400", 0, "want a number"},
	} {
		t.Run(c.in, func(t *testing.T) {
			got, err := ParseBytes(c.in)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("got %v, %v; want error containing %q", got, err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{FormatBytes(7.5e9), "7.5 GB"},
		{FormatBytes(43.5e9), "43.5 GB"},
		{FormatBytes(250e9), "250 GB"},
		{FormatBytes(10485760), "10.5 MB"},
		{FormatBytes(1.359375e9), "1.36 GB"},
		{FormatBytes(234.375e6), "234 MB"},
		{FormatBytes(1310720), "1.31 MB"},
		{FormatBytes(999.7e6), "1 GB"},
		{FormatBytes(2.5e12), "2.5 TB"},
		{FormatBytes(519250), "519 kB"},
		{FormatBytes(50), "50 B"},
		{FormatSize(2 * GiB), "2 GiB"},
		{FormatSize(1.5 * GiB), "1.5 GiB"},
		{FormatSize(100e9), "100 GB"},
		{FormatCount(48606.67), "48,607"},
		{FormatCount(4.6875e9), "4,687,500,000"},
		{FormatCount(999), "999"},
		{FormatCount(-1234), "-1,234"},
		{FormatPercent(0.99326), "99.3%"},
		{FormatPercent(0.048607), "4.86%"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// FuzzParseBytes checks ParseBytes, which reads flags, environment and config files, never
// panics, never returns a negative or non-finite size, and reads back what FormatSize and
// FormatBytes print to within their three significant digits.
func FuzzParseBytes(f *testing.F) {
	for _, s := range []string{"2GiB", "1.5 GB", "2e9", "", "-1", "1e400", "0x1p4MiB", "NaN", "5 kB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseBytes(s)
		if err != nil {
			return
		}
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("ParseBytes(%q) = %v", s, v)
		}
		if v < 1 || v > 1e15 {
			return
		}
		for _, printed := range []string{FormatSize(v), FormatBytes(v)} {
			back, err := ParseBytes(printed)
			if err != nil {
				t.Fatalf("ParseBytes(%q) (printed from %v): %v", printed, v, err)
			}
			if math.Abs(back-v) > 0.01*v {
				t.Fatalf("%v printed %q reads back as %v", v, printed, back)
			}
		}
	})
}
