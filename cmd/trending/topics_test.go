package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTopicsDemoAndReview runs the demo into a queue file, then lists, approves and rejects
// through `trending topics review`, checking the file after each step.
func TestTopicsDemoAndReview(t *testing.T) {
	queue := filepath.Join(t.TempDir(), "review.json")
	out, err := runTrending(t, "topics", "demo", "--per-hour", "2000", "--junk", "20000", "--sketch-width", "4096", "--queue", queue)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	for _, want := range []string{"world (volume):", "us (surge):", "marathon", "quake  pending  new-topic"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	// The surge list of us has the marathon; the never-seen quake is on no list.
	us := out[strings.Index(out, "us (surge):"):strings.Index(out, "jp (surge):")]
	if !strings.Contains(us, "marathon") {
		t.Errorf("us list:\n%s", us)
	}
	lists := out[:strings.Index(out, "held for review:")]
	if strings.Contains(lists, "quake") || strings.Contains(strings.ToLower(lists), "freemoney") || strings.Contains(lists, "junk") {
		t.Errorf("held, banned or junk topic listed:\n%s", lists)
	}

	out, err = runTrending(t, "topics", "review", "--queue", queue)
	if err != nil || !strings.Contains(out, "quake") {
		t.Fatalf("review list: %v\n%s", err, out)
	}
	if out, err = runTrending(t, "topics", "review", "approve", "quake", "--queue", queue, "--by", "alice"); err != nil || out != "approved quake\n" {
		t.Fatalf("approve: %v %q", err, out)
	}
	var f struct {
		Held []struct{ Topic, Status, By string }
	}
	b, _ := os.ReadFile(queue)
	if err := json.Unmarshal(b, &f); err != nil || len(f.Held) != 1 || f.Held[0].Status != "approved" || f.Held[0].By != "alice" {
		t.Fatalf("queue after approve: %v %s", err, b)
	}
	if out, _ := runTrending(t, "topics", "review", "--queue", queue); !strings.Contains(out, "no topics held") {
		t.Errorf("pending list after approval: %s", out)
	}
	if out, err := runTrending(t, "topics", "review", "reject", "quake", "--queue", queue, "--json"); err != nil || out != "rejected quake\n" {
		t.Fatalf("reject: %v %q", err, out)
	}
	for _, args := range [][]string{
		{"topics", "review", "approve", "nope", "--queue", queue},
		{"topics", "review", "approve", "--queue", queue},
		{"topics", "review", "maybe", "--queue", queue},
		{"topics", "review", "--s3-bucket", ""},
		{"topics", "review", "--queue", filepath.Join(t.TempDir(), "missing.json")},
		{"topics", "demo", "--regions", "world"},
	} {
		_, err := runTrending(t, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// TestTopicsPlan prints the trending-topics sizing and checks the figures of docs/topics.md.
func TestTopicsPlan(t *testing.T) {
	out, err := runTrending(t, "topics", "plan")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"minute sketch: 1.31 MB", "78.6 MB per worker", "32,520 a minute", "1.35 mentions a minute",
		"20.2 over 15 minutes", "0.674 a minute with one key", "may read 320", "21,504 hourly sketches", "3.9 MB per worker"} {
		if !strings.Contains(out, want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	out, err = runTrending(t, "topics", "plan", "--json")
	var s struct {
		OvercountMinute float64 `json:"overcount_minute"`
	}
	if err != nil || json.Unmarshal([]byte(out), &s) != nil || s.OvercountMinute < 1.34 || s.OvercountMinute > 1.36 {
		t.Errorf("plan --json: %v %s", err, out)
	}
	if _, err := runTrending(t, "topics", "plan", "--sketch-width", "0"); err == nil {
		t.Error("zero width accepted")
	}
}
