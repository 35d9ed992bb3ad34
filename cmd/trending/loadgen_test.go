package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trending/internal/eventlog"
	"trending/internal/stream"
	"trending/internal/titles"
)

func TestLoadgenFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--zipf", "0"}, "--zipf"},
		{[]string{"--items", "1.5"}, "whole number"},
		{[]string{"--items", "0"}, "--items"},
		{[]string{"--rate", "-5"}, "--rate"},
		{[]string{"--late", "2"}, "--late"},
		{[]string{"--malformed", "1.5"}, "--malformed"},
		{[]string{"--viral", "V42@soon"}, "--viral"},
		{[]string{"--viral", "A@+0s:60%:1h,B@+1m:60%:1h"}, "together take"},
		{[]string{"--duration", "1.5s"}, "--duration"},
		{[]string{"--duration", "xd"}, "days"},
		{[]string{"--start", "tomorrow"}, "--start"},
		{[]string{"--speedup", "NaN"}, "--speedup"},
		{[]string{"--kafka", ""}, "--kafka"},
		{[]string{"--servers", "0"}, "--servers"},
		{[]string{"--truth", "/no/such/dir/t.jsonl"}, "--truth"},
		{[]string{"--metadata", "/no/such/dir/items.csv"}, "--metadata"},
		{[]string{"--thumbnail-url", "https://img.example/{id}.jpg"}, "needs --metadata"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, err := runTrending(t, append([]string{"loadgen", "--kafka", "127.0.0.1:1"}, c.args...)...)
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want a usage error mentioning %q", err, c.want)
			}
		})
	}
}

func TestStreamFlagsStart(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 500, time.UTC)
	for in, want := range map[string]time.Time{
		"now":                  now.Truncate(time.Second),
		"-30d":                 now.Add(-30 * 24 * time.Hour).Truncate(time.Second),
		"+1h":                  now.Add(time.Hour).Truncate(time.Second),
		"2026-01-20T00:00:00Z": time.Date(2026, 1, 20, 0, 0, 0, 0, time.UTC),
	} {
		f := streamFlags{items: 10, zipf: 1.1, servers: 1, start: in}
		c, err := f.config(now)
		if err != nil || !c.Start.Equal(want) {
			t.Errorf("--start %s: %s, %v; want %s", in, c.Start, err, want)
		}
	}
}

// TestLoadgenEmbedded runs the command against the embedded broker and
// checks the truth file it writes.
func TestLoadgenEmbedded(t *testing.T) {
	kf, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer kf.Close()
	file, meta := filepath.Join(t.TempDir(), "truth.jsonl"), filepath.Join(t.TempDir(), "items.csv")
	_, err = runTrending(t, "loadgen", "--kafka", kf.Addr, "--views-topic", "lg", "--partitions", "3", "--rate", "1000",
		"--duration", "3s", "--speedup", "0", "--items", "1000", "--servers", "20", "--malformed", "0.01",
		"--viral", "Vhot@+1s:50%:1s", "--truth", file, "--seed", "7",
		"--metadata", meta, "--thumbnail-url", "https://img.example/{id}.jpg", "--start", "2026-01-20T00:00:00Z", "--log-format", "text")
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	if st, _ := f.Stat(); st.Mode().Perm() != 0o644 {
		t.Errorf("truth file mode %v, want 0644", st.Mode().Perm())
	}
	defer f.Close()
	tr, err := stream.ReadTruth(f)
	if err != nil {
		t.Fatal(err)
	}
	from := time.Date(2026, 1, 20, 0, 0, 0, 0, time.UTC)
	c := tr.Range(from, from.Add(time.Minute))
	if tr.Views() != 3000 || c.Total() != 3000 || c.Get("Vhot") < 400 || c.Get("Vhot") > 600 {
		t.Fatalf("truth has %d views (%d in the minute, Vhot %d), want 3000 with Vhot near 500", tr.Views(), c.Total(), c.Get("Vhot"))
	}
	// The metadata names every item the stream can send, in the --titles format (merge, batch, up).
	src, err := titles.Open(meta)
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.Titles(context.Background(), []string{"V1", "V1000", "Vhot", "V1001"})
	if err != nil || len(got) != 3 || got["V1"] != (titles.Meta{Title: stream.Title(1), Thumbnail: "https://img.example/V1.jpg"}) ||
		got["Vhot"].Title == "" || got["Vhot"].Thumbnail != "https://img.example/Vhot.jpg" {
		t.Fatalf("metadata: %v, %v", got, err)
	}
}
