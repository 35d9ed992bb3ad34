package event

import (
	"fmt"
	"time"
	"unicode/utf8"
)

// JSON field names, shared with the Parquet and ClickHouse column names.
const (
	FieldItemID = "item_id"
	FieldCount  = "count"
	FieldTS     = "ts"
	FieldRegion = "region"
	// FieldUserID and FieldAccountAgeDays are the optional trending-topics hints (seed
	// 001): who mentioned the topic, for the user-per-topic dedupe, and how old the
	// account is, for the new-account weight.
	FieldUserID         = "user_id"
	FieldAccountAgeDays = "account_age_days"
)

// Limits of a valid event. schemas/event.schema.json states the same numbers; a test checks
// that they agree.
const (
	// MaxEventBytes bounds one encoded message. The largest valid event, fully \u-escaped,
	// is about 2.8 KiB, so this only ever rejects junk.
	MaxEventBytes = 4096
	// MaxItemIDBytes bounds item_id in bytes of UTF-8 (not characters): storage and keys
	// are sized in bytes.
	MaxItemIDBytes = 256
	// MaxRegionBytes bounds region in bytes of UTF-8.
	MaxRegionBytes = 64
	// MaxUserIDBytes bounds user_id in bytes of UTF-8: room for a UUID, a 64-hex-digit
	// hash or a namespaced id, not for a payload.
	MaxUserIDBytes = 128
	// MaxAccountAgeDays bounds account_age_days: about 274 years, so it only rejects junk
	// (a millisecond or second count sent as days).
	MaxAccountAgeDays = 100_000
	// MinCount and MaxCount bound count. One event is one item on one server in one
	// second; a million views in that second is already implausible.
	MinCount = 1
	MaxCount = 1_000_000
	// MinTSMilli (inclusive) and MaxTSMilli (exclusive) bound ts in Unix milliseconds:
	// 2000-01-01T00:00:00Z and 2100-01-01T00:00:00Z.
	MinTSMilli = 946_684_800_000
	MaxTSMilli = 4_102_444_800_000
)

// Event is one pre-summed view event: Count views of ItemID in the second around TS, seen by
// one server.
type Event struct {
	// ItemID identifies the item (video, song, topic); it is the Kafka key.
	ItemID string
	// Count is the number of views, MinCount..MaxCount.
	Count uint32
	// TS is the event time. Decode returns it in UTC with millisecond precision.
	TS time.Time
	// Region is optional; "" means none.
	Region string
	// UserID is optional; "" means none. When set, trending topics count the user once
	// per topic per 15 minutes, so ingest must not pre-sum such events.
	UserID string
	// AccountAgeDays is the account's age in whole days, 0..MaxAccountAgeDays; it means
	// something only when HasAccountAge is set (AppendJSON leaves it out otherwise).
	// Trending topics weigh a young account's mention less.
	AccountAgeDays int32
	// HasAccountAge tells an absent account_age_days (the account counts as established)
	// from 0 (created today).
	HasAccountAge bool
}

// UnixMilli returns the event time in Unix milliseconds, the unit of bucket arithmetic.
func (e Event) UnixMilli() int64 { return e.TS.UnixMilli() }

// Validate checks an event built in Go (loadgen, HTTP ingest) against the rules Decode
// enforces on the wire, and returns a *DecodeError with the same Reason Decode would give.
// It does not require TS to be in UTC or at millisecond precision: AppendJSON normalises
// both, so an event that passes Validate always encodes to one that Decode accepts.
func (e Event) Validate() error {
	if d := checkItemID(e.ItemID); d != "" {
		return &DecodeError{Reason: ReasonBadItemID, Field: FieldItemID, Detail: d}
	}
	if e.Count < MinCount || e.Count > MaxCount {
		return countRange(fmt.Sprint(e.Count))
	}
	if ms := e.TS.UnixMilli(); ms < MinTSMilli || ms >= MaxTSMilli || e.TS.IsZero() {
		return &DecodeError{Reason: ReasonBadTS, Field: FieldTS,
			Detail: tsRangeDetail + ", got " + e.TS.UTC().Format(time.RFC3339Nano)}
	}
	if d := checkRegion(e.Region); d != "" {
		return &DecodeError{Reason: ReasonBadRegion, Field: FieldRegion, Detail: d}
	}
	if d := checkUserID(e.UserID); d != "" {
		return &DecodeError{Reason: ReasonBadUserID, Field: FieldUserID, Detail: d}
	}
	if e.HasAccountAge && (e.AccountAgeDays < 0 || e.AccountAgeDays > MaxAccountAgeDays) {
		return accountAgeRange(fmt.Sprint(e.AccountAgeDays))
	}
	return nil
}

func accountAgeRange(got string) *DecodeError {
	return &DecodeError{Reason: ReasonBadAccountAge, Field: FieldAccountAgeDays,
		Detail: fmt.Sprintf("must be 0..%d, got %s", MaxAccountAgeDays, got)}
}

func checkUserID(s string) string {
	if len(s) > MaxUserIDBytes {
		return fmt.Sprintf("must be at most %d bytes, got %d", MaxUserIDBytes, len(s))
	}
	return textProblemString(s)
}

const tsRangeDetail = "must be in [2000-01-01T00:00:00Z, 2100-01-01T00:00:00Z)"

func countRange(got string) *DecodeError {
	return &DecodeError{Reason: ReasonBadCount, Field: FieldCount,
		Detail: fmt.Sprintf("must be %d..%d, got %s", MinCount, MaxCount, got)}
}

func checkItemID(s string) string {
	if s == "" {
		return "must not be empty"
	}
	if len(s) > MaxItemIDBytes {
		return fmt.Sprintf("must be at most %d bytes, got %d", MaxItemIDBytes, len(s))
	}
	return textProblemString(s)
}

func checkRegion(s string) string {
	if len(s) > MaxRegionBytes {
		return fmt.Sprintf("must be at most %d bytes, got %d", MaxRegionBytes, len(s))
	}
	return textProblemString(s)
}

// isControl reports the Unicode Cc category: C0, DEL and C1. They have no business in an id,
// break line-oriented logs and CSV exports, and are the usual sign of a binary or
// mis-decoded producer.
func isControl(r rune) bool { return r < 0x20 || (r >= 0x7f && r <= 0x9f) }

// textProblemString is textProblemBytes for events built in Go (Validate); the conversion of
// a short id does not escape, so it needs no allocation.
func textProblemString(s string) string { return textProblemBytes([]byte(s)) }

// textProblemBytes returns why b is not acceptable text (invalid UTF-8 or a control
// character), or "". The decoder calls it on the raw bytes; the ASCII loop is the hot path.
func textProblemBytes(b []byte) string {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if isControl(rune(c)) {
				return fmt.Sprintf("must not contain control character U+%04X (at byte %d)", c, i)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Sprintf("must be valid UTF-8 (bad byte 0x%02x at byte %d)", c, i)
		}
		if isControl(r) {
			return fmt.Sprintf("must not contain control character U+%04X (at byte %d)", r, i)
		}
		i += size
	}
	return ""
}

// ReasonFutureTS is the stable reason for an event dated more than the allowed skew ahead
// of the clock (see Ahead). The decoder cannot judge it (it has no clock); the speed layer
// sends such an event to the DLQ and the archive to its quarantine under this reason, with
// the same rule, so neither counts what the other refuses.
const ReasonFutureTS Reason = "future_ts"

// DefaultMaxFuture is how far ahead of the clock an event may be dated and still be
// counted and archived: far more than any clock skew between producers, far less than the
// allowed lateness a watermark must not jump by.
const DefaultMaxFuture = 10 * time.Minute

// Ahead returns how far event time ts is ahead of the clock: the message's Kafka timestamp
// msgTime, or now when that is earlier or msgTime is zero. The Kafka timestamp makes a
// replay judge an event as its first reading did, however much later it runs; the wall
// clock caps a producer whose own clock runs ahead.
func Ahead(ts, msgTime, now time.Time) time.Duration {
	clock := now
	if !msgTime.IsZero() && msgTime.Before(now) {
		clock = msgTime
	}
	return ts.Sub(clock)
}
