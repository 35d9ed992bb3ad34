package topics

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
)

// DefaultBlocklistInterval is how often the blocklist file is checked: a new ban applies
// within about a minute (seed 001).
const DefaultBlocklistInterval = time.Minute

// MaxBlocklistBytes bounds the file, so a wrong path (a log, a dump) fails loudly instead of
// filling memory.
const MaxBlocklistBytes = 16 << 20

// Blocklist drops mentions of banned terms on arrival. The file has one term a line; blank
// lines and lines starting with '//' or a '#' followed by a space are ignored (a '#' directly followed
// by a word is a hashtag and is a term). Matching ignores case and a leading '#': a topic is
// blocked when it equals a term or when any of its words (runs of letters and digits) does,
// so banning "spam" blocks "#Spam", "spam" and "cheap_spam_now".
//
// The file is reloaded when its modification time or size changes; a missing or unreadable
// file keeps the previous list and reports the error, so a bad deploy cannot lift every
// ban at once. Blocked is safe for concurrent use with Reload.
type Blocklist struct {
	path  string
	terms atomic.Pointer[map[string]struct{}]

	mu      sync.Mutex // serialises reloads
	modTime time.Time
	size    int64
}

// OpenBlocklist loads the file at path. An empty path gives a list that blocks nothing.
func OpenBlocklist(path string) (*Blocklist, error) {
	b := &Blocklist{path: path}
	empty := map[string]struct{}{}
	b.terms.Store(&empty)
	if path == "" {
		return b, nil
	}
	if _, err := b.Reload(); err != nil {
		return nil, err
	}
	return b, nil
}

// NewBlocklist returns a list of the given terms with no file behind it, for tests and
// embedded use.
func NewBlocklist(terms ...string) *Blocklist {
	m := make(map[string]struct{}, len(terms))
	for _, t := range terms {
		if t = normalize(t); t != "" {
			m[t] = struct{}{}
		}
	}
	b := &Blocklist{}
	b.terms.Store(&m)
	return b
}

// Len returns the number of terms.
func (b *Blocklist) Len() int { return len(*b.terms.Load()) }

// Blocked reports whether topic is banned. It does not allocate for ASCII topics already in
// lower case.
func (b *Blocklist) Blocked(topic string) bool {
	terms := *b.terms.Load()
	if len(terms) == 0 {
		return false
	}
	t := normalize(topic)
	if _, ok := terms[t]; ok {
		return true
	}
	// Each word, without allocating the slice strings.FieldsFunc would.
	start := -1
	for i, r := range t {
		if notWord(r) {
			if start >= 0 {
				if _, ok := terms[t[start:i]]; ok {
					return true
				}
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	if start > 0 {
		_, ok := terms[t[start:]]
		return ok
	}
	return false
}

// Reload reads the file again if its modification time or size changed, and reports
// whether it did. On error the previous terms stay in force.
func (b *Blocklist) Reload() (bool, error) {
	if b.path == "" {
		return false, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	fi, err := os.Stat(b.path)
	if err != nil {
		return false, fmt.Errorf("blocklist %s: %w", b.path, err)
	}
	if fi.ModTime().Equal(b.modTime) && fi.Size() == b.size && b.modTime != (time.Time{}) {
		return false, nil
	}
	if fi.Size() > MaxBlocklistBytes {
		return false, fmt.Errorf("blocklist %s: %d bytes, over the %d-byte limit: is this the right file?", b.path, fi.Size(), MaxBlocklistBytes)
	}
	data, err := os.ReadFile(b.path)
	if err != nil {
		return false, fmt.Errorf("blocklist %s: %w", b.path, err)
	}
	terms, err := ParseBlocklist(bytes.NewReader(data))
	if err != nil {
		return false, fmt.Errorf("blocklist %s: %w", b.path, err)
	}
	b.terms.Store(&terms)
	b.modTime, b.size = fi.ModTime(), fi.Size()
	return true, nil
}

// Run reloads every interval (DefaultBlocklistInterval when zero) until ctx ends, logging
// nothing: report receives each reload's outcome (it may be nil).
func (b *Blocklist) Run(ctx context.Context, interval time.Duration, report func(reloaded bool, err error)) error {
	if interval <= 0 {
		interval = DefaultBlocklistInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r, err := b.Reload()
			if report != nil {
				report(r, err)
			}
		}
	}
}

// ParseBlocklist reads terms, one a line, normalised (lower case, no leading '#').
func ParseBlocklist(r io.Reader) (map[string]struct{}, error) {
	terms := map[string]struct{}{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "//") || line == "#" || strings.HasPrefix(line, "# ") {
			continue
		}
		if t := normalize(line); t != "" {
			terms[t] = struct{}{}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read terms: %w", err)
	}
	return terms, nil
}

// normalize lower-cases a topic and strips surrounding space and leading '#'s.
func normalize(s string) string {
	s = strings.TrimRightFunc(strings.TrimLeftFunc(s, func(r rune) bool { return r == '#' || unicode.IsSpace(r) }), unicode.IsSpace)
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' || c >= 0x80 {
			return strings.ToLower(s)
		}
	}
	return s
}

func notWord(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }
