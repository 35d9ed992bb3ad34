package topicstore

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestBlocklistReload: a change to the file applies on the next Reload; an unchanged file
// is not re-read; a deleted file keeps the old terms.
func TestBlocklistReload(t *testing.T) {
	path := filepath.Join(t.TempDir(), "blocklist.txt")
	write := func(s string, mod time.Time) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	t0 := time.Now().Add(-time.Hour)
	write("# banned terms\nspam\n\n// old\n#badtag\n", t0)
	b, err := OpenBlocklist(path)
	if err != nil {
		t.Fatal(err)
	}
	if !b.Blocked("spam") || !b.Blocked("#BadTag") || b.Blocked("scam") || b.Len() != 2 {
		t.Fatalf("initial terms wrong: len %d", b.Len())
	}
	if r, err := b.Reload(); r || err != nil {
		t.Fatalf("unchanged file reloaded: %v %v", r, err)
	}
	write("spam\nscam\n", t0.Add(time.Minute))
	if r, err := b.Reload(); !r || err != nil {
		t.Fatalf("changed file not reloaded: %v %v", r, err)
	}
	if !b.Blocked("scam") || b.Blocked("badtag") {
		t.Error("new terms not in force")
	}
	os.Remove(path)
	if _, err := b.Reload(); err == nil {
		t.Error("missing file: no error")
	}
	if !b.Blocked("scam") {
		t.Error("missing file lifted the bans")
	}
	if _, err := OpenBlocklist(path); err == nil {
		t.Error("OpenBlocklist of a missing file succeeded")
	}
}
