package topicrules

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
)

// DefaultBlocklistInterval is how often the blocklist file is checked: a new ban applies
// within about a minute, without a restart.
const DefaultBlocklistInterval = time.Minute

// MaxBlocklistBytes bounds the file, so a wrong path (a log, a dump) fails loudly instead of
// filling memory.
const MaxBlocklistBytes = 16 << 20

// BlocklistSource reads a blocklist's terms file for Reload: its bytes and true when it
// changed since the last call, false when it did not, or an error (the previous terms then
// stay in force). internal/topicstore.OpenBlocklist gives one over a local file; the rules
// themselves do no I/O.
type BlocklistSource func() (data []byte, changed bool, err error)

// Blocklist drops mentions of banned terms on arrival. The file has one term a line; blank
// lines and lines starting with '//' or a '#' followed by a space are ignored (a '#' directly followed
// by a word is a hashtag and is a term). Matching ignores case and a leading '#': a topic is
// blocked when it equals a term or when any of its words (runs of letters and digits) does,
// so banning "spam" blocks "#Spam", "spam" and "cheap_spam_now".
//
// The file is reloaded when its source says it changed (a local file: its modification
// time or size); a missing or unreadable file keeps the previous list and reports the
// error, so a bad deploy cannot lift every ban at once. Blocked is safe for concurrent use
// with Reload.
type Blocklist struct {
	name  string // the source's name in errors (a path)
	src   BlocklistSource
	terms atomic.Pointer[map[string]struct{}]

	mu sync.Mutex // serialises reloads
}

// NewBlocklistFrom loads a list from src, named name in errors, and reloads from it.
func NewBlocklistFrom(name string, src BlocklistSource) (*Blocklist, error) {
	b := &Blocklist{name: name, src: src}
	empty := map[string]struct{}{}
	b.terms.Store(&empty)
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

// Reload reads the source again if it changed, and reports whether the terms were
// replaced. On error the previous terms stay in force. A list with no source (NewBlocklist)
// never reloads.
func (b *Blocklist) Reload() (bool, error) {
	if b.src == nil {
		return false, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	data, changed, err := b.src()
	if err != nil || !changed {
		return false, err
	}
	terms, err := ParseBlocklist(bytes.NewReader(data))
	if err != nil {
		return false, fmt.Errorf("blocklist %s: %w", b.name, err)
	}
	b.terms.Store(&terms)
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
