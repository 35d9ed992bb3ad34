package topicstore

import (
	"trending/model/topicrules"

	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestReviewFile writes a queue, reads it back with its decisions, replaces it, and checks
// the errors of a missing and a corrupt file.
func TestReviewFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "review.json")
	now := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)
	r := topicrules.NewReview(0)
	r.Hold("quake", "jp", topicrules.ReasonNewTopic, now, 3000, 60)
	r.Hold("#freemoney", "us", topicrules.ReasonNewAccounts, now, 200, 4)
	if err := r.Reject("#freemoney", "alice", now); err != nil {
		t.Fatal(err)
	}
	if err := WriteReviewFile(path, r); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasSuffix(string(b), "}\n") || !strings.Contains(string(b), "\n  ") {
		t.Fatalf("file is not indented JSON ending in a newline (%v):\n%s", err, b)
	}
	got, err := ReadReviewFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for topic, want := range map[string]topicrules.Status{"quake": topicrules.Pending, "#freemoney": topicrules.Rejected} {
		if s, ok := got.Status(topic); !ok || s != want {
			t.Errorf("%s: status %q, %v; want %q", topic, s, ok, want)
		}
	}
	if err := got.Approve("quake", "bob", now); err != nil {
		t.Fatal(err)
	}
	if err := WriteReviewFile(path, got); err != nil {
		t.Fatal(err)
	}
	again, err := ReadReviewFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := again.Status("quake"); s != topicrules.Approved {
		t.Errorf("quake after the rewrite: %q, want approved", s)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left behind: %v", ents)
	}

	if _, err := ReadReviewFile(filepath.Join(dir, "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want os.ErrNotExist", err)
	}
	bad := filepath.Join(dir, "bad.json")
	if err := os.WriteFile(bad, []byte("{not json"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadReviewFile(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("corrupt file: %v, want an error naming it", err)
	}
	if err := WriteReviewFile(filepath.Join(dir, "no", "such", "dir.json"), r); err == nil {
		t.Error("write into a missing directory: no error")
	}
}
