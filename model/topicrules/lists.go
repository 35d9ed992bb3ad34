package topicrules

import (
	"fmt"
	"strings"
	"time"
)

// World is the name of the worldwide list (the API's region=world). Every mention counts
// towards it as well as towards its region's list.
const World = "world"

// The rules the speed layer applies live and the batch applies exactly.
const (
	// DefaultBaselineDays is how many past days' same clock hour make the baseline.
	DefaultBaselineDays = 7
	// DefaultListSize is the length of a served list: 50 topics, what a trending panel shows.
	DefaultListSize = 50
	// DefaultDedupeTTL is how long a (user, topic) pair is remembered: a user counts once per
	// topic per 15 minutes, the list window, so one account cannot push a topic alone.
	DefaultDedupeTTL = 15 * time.Minute
	// MaxRegions bounds the configured regions: each is a list the speed layer keeps per
	// partition, so the state grows with them.
	MaxRegions = 64
)

// ValidateLists checks the configured regional lists (besides World) and the score of each
// named list, as every role that computes topics lists does.
func ValidateLists(regions []string, scores map[string]Score) error {
	if len(regions) > MaxRegions {
		return fmt.Errorf("%w: %d regions, at most %d", ErrConfig, len(regions), MaxRegions)
	}
	seen := map[string]bool{}
	for _, r := range regions {
		switch {
		case r == "" || len(r) > 64:
			return fmt.Errorf("%w: region %q must be 1-64 bytes", ErrConfig, r)
		case r == World:
			return fmt.Errorf("%w: region %q is the worldwide list's name: leave it out", ErrConfig, r)
		case strings.ContainsFunc(r, isControl):
			return fmt.Errorf("%w: region %q has a control character", ErrConfig, r)
		case seen[r]:
			return fmt.Errorf("%w: region %q is listed twice", ErrConfig, r)
		}
		seen[r] = true
	}
	for name, s := range scores {
		if name != World && !seen[name] {
			return fmt.Errorf("%w: score set for %q, which is not a configured region or %q", ErrConfig, name, World)
		}
		if _, err := ParseScore(string(s)); err != nil {
			return fmt.Errorf("%w: list %q: %w", ErrConfig, name, err)
		}
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }
