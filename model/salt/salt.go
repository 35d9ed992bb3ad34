// Package salt holds the rules of hot-key salting (seed 004; docs/scale-out.md, "Hot keys")
// that every role applies alike: how a salted message is keyed and marked, the hot set's
// entries as producers share them, and the Salter a producer keys its messages with.
//
// Every event of an item is keyed by its item_id, so all of an item's events go to one Kafka
// partition. An item hot enough to overload that partition is salted: its events are spread
// over N sub-keys, chosen per message, so they land on up to N partitions. Sub-key 0 is the
// item id itself, so one share stays on the item's own partition (the one that holds its
// counts from before the salting); sub-key i > 0 is "item#i". The event in the message is
// unchanged (its item_id is the item's), so the archive and the batch see the original id.
// Every salted message carries the header Header, so a speed worker tells a salted message
// from an unsalted one by the message alone: the sub-key 0 messages of the item's own
// partition too. That is why salting needs no coordination beyond the producers: a partition
// that receives a salted message of an item reports the item's count in full from then on
// (model.Partial.Salted), and the merger sums an item's counts over the partitions that
// report it. Producers that disagree on the set, or a set that changes in the middle of a
// window, only move which partitions an item's events land on, never what is counted.
//
// In detail (DESIGN.md's file map has the line): the rules of hot-key salting every role
// applies alike: the sub-keys (`Key`: the item itself for sub-key 0, `item#i` else), the
// `trending-salt` header a salted message carries, the hot set's entry (`Entry`, its JSON)
// and `Set`, the configured items (`ParseItems`), and the `Salter` producers key their
// messages with (round robin over an item's sub-keys; detection of an item past
// `Threshold` messages a second, shared through a callback)
package salt

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"trending/internal/setting"
	"trending/model/event"
)

// Header is the Kafka header every salted message carries; its value is "i/N": sub-key i of
// N. A speed worker checks only that it is there.
const Header = "trending-salt"

// Limits and defaults of the number of sub-keys (ways) an item is spread over.
const (
	// MinWays: fewer than 2 sub-keys is not salting.
	MinWays = 2
	// MaxWays bounds the sub-keys of one item: every partition that receives one reports the
	// item's count on every publish, so more ways than partitions buys nothing.
	MaxWays = 256
	// DefaultWays is the ways of a detected item (Config.Ways) and of a configured item
	// listed without them.
	DefaultWays = 4
)

// Key is the Kafka message key of sub-key i of item: the item itself for i = 0, so that one
// share of a salted item stays on the partition that holds its unsalted counts, and
// "item#i" otherwise.
func Key(item string, i int) string {
	if i == 0 {
		return item
	}
	return item + "#" + strconv.Itoa(i)
}

// HeaderValue is the value of Header for sub-key i of ways: "i/ways".
func HeaderValue(i, ways int) []byte {
	return []byte(strconv.Itoa(i) + "/" + strconv.Itoa(ways))
}

// ParseHeader reads a Header value.
func ParseHeader(v []byte) (i, ways int, err error) {
	a, b, ok := strings.Cut(string(v), "/")
	if ok {
		i, err = strconv.Atoi(a)
		if err == nil {
			ways, err = strconv.Atoi(b)
		}
	}
	if !ok || err != nil || ways < MinWays || ways > MaxWays || i < 0 || i >= ways {
		return 0, 0, fmt.Errorf("salt header %q: want i/N with 0 <= i < N and %d <= N <= %d", v, MinWays, MaxWays)
	}
	return i, ways, nil
}

// Entry is one item of the hot set, as producers share it (internal/hotset: a compacted
// Kafka topic keyed by item).
type Entry struct {
	Item string `json:"item"`
	// Ways is how many sub-keys the item's events are spread over, MinWays..MaxWays.
	Ways int `json:"ways"`
	// Until: a detected item is salted until then, unless it is detected again. Zero: a
	// configured item, salted for as long as it is configured.
	Until time.Time `json:"until,omitzero"`
	// By says who decided: "config", or the producer that detected it.
	By string `json:"by,omitempty"`
}

// ErrEntry is wrapped by the errors of Entry.Validate and DecodeEntry.
var ErrEntry = errors.New("bad hot-set entry")

// Validate checks an entry's fields: the item under the event's item_id rules, and the ways.
func (e Entry) Validate() error {
	if e.Item == "" || len(e.Item) > event.MaxItemIDBytes || !utf8.ValidString(e.Item) || strings.ContainsFunc(e.Item, isControl) {
		return fmt.Errorf("%w: item %q: want 1 to %d bytes of UTF-8 without control characters, as an event's item_id", ErrEntry, e.Item, event.MaxItemIDBytes)
	}
	if e.Ways < MinWays || e.Ways > MaxWays {
		return fmt.Errorf("%w: item %q: ways %d: want %d to %d", ErrEntry, e.Item, e.Ways, MinWays, MaxWays)
	}
	return nil
}

func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }

// Encode is the entry's wire form (JSON).
func (e Entry) Encode() ([]byte, error) { return json.Marshal(e) }

// DecodeEntry parses and checks an entry.
func DecodeEntry(b []byte) (Entry, error) {
	var e Entry
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("%w: %w", ErrEntry, err)
	}
	return e, e.Validate()
}

// ParseItems reads the configured hot items: "item[=ways],item[=ways],..."; an item without
// ways gets DefaultWays. The entries have no Until (salted for as long as configured).
func ParseItems(spec string) ([]Entry, error) {
	if strings.TrimSpace(spec) == "" {
		return nil, nil
	}
	var out []Entry
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		item, ways, hasWays := strings.Cut(strings.TrimSpace(part), "=")
		e := Entry{Item: item, Ways: DefaultWays, By: "config"}
		if hasWays {
			n, err := strconv.Atoi(ways)
			if err != nil {
				return nil, setting.Invalid("Items", "%q: ways %q is not a number: write item=ways, such as video-1=8", part, ways)
			}
			e.Ways = n
		}
		if err := e.Validate(); err != nil {
			return nil, setting.Invalid("Items", "%q: %v", part, err)
		}
		if seen[item] {
			return nil, setting.Invalid("Items", "%q is listed twice", item)
		}
		seen[item] = true
		out = append(out, e)
	}
	return out, nil
}
