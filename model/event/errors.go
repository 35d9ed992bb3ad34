package event

import (
	"errors"
	"strconv"
)

// ErrInvalid is wrapped by every *DecodeError, so callers that only need to know "this event
// is bad, not this connection" can test errors.Is(err, event.ErrInvalid).
var ErrInvalid = errors.New("invalid event")

// Reason is a stable machine code for why an event was rejected. It is the value of the
// Kafka DLQ header and the label of the rejection metric, so existing values never change
// meaning; new ones may be added.
type Reason string

// The rejection reasons. Each *DecodeError carries exactly one.
const (
	ReasonMalformedJSON  Reason = "malformed_json"  // not one syntactically valid JSON object
	ReasonTooLarge       Reason = "too_large"       // message longer than MaxEventBytes
	ReasonTrailingData   Reason = "trailing_data"   // non-whitespace after the object
	ReasonUnknownField   Reason = "unknown_field"   // a field name the schema does not define
	ReasonDuplicateField Reason = "duplicate_field" // the same field twice
	ReasonMissingField   Reason = "missing_field"   // item_id, count or ts absent
	ReasonBadItemID      Reason = "bad_item_id"     // wrong type, empty, too long, bad characters
	ReasonBadCount       Reason = "bad_count"       // wrong type, not an integer, out of range
	ReasonBadTS          Reason = "bad_ts"          // wrong type or form, impossible date, out of range
	ReasonBadRegion      Reason = "bad_region"      // wrong type, too long, bad characters
	ReasonBadUserID      Reason = "bad_user_id"     // wrong type, too long, bad characters
	ReasonBadAccountAge  Reason = "bad_account_age" // wrong type, not an integer, out of range
)

var reasons = []Reason{
	ReasonMalformedJSON, ReasonTooLarge, ReasonTrailingData, ReasonUnknownField,
	ReasonDuplicateField, ReasonMissingField, ReasonBadItemID, ReasonBadCount, ReasonBadTS,
	ReasonBadRegion, ReasonBadUserID, ReasonBadAccountAge,
}

// Reasons returns every Reason, for pre-registering metric label values so that a
// rejection counter exists (at zero) before the first rejection.
func Reasons() []Reason {
	return append([]Reason(nil), reasons...)
}

// DecodeError says why an event was rejected. Reason is the stable code, Field the JSON
// field concerned (empty when the problem is not about one field, such as malformed JSON),
// and Detail a human-readable explanation that may change between versions.
type DecodeError struct {
	Reason Reason
	Field  string
	Detail string
}

// Error returns "field: detail", or "reason: detail" when no field is concerned, for example
// "count: must be 1..1000000, got 0".
func (e *DecodeError) Error() string {
	if e.Field != "" {
		return e.Field + ": " + e.Detail
	}
	return string(e.Reason) + ": " + e.Detail
}

// Unwrap makes errors.Is(err, ErrInvalid) true for every DecodeError.
func (e *DecodeError) Unwrap() error { return ErrInvalid }

// ReasonOf returns the Reason of a *DecodeError anywhere in err's chain, or "" when err is
// not an event rejection (nil, or a transport error).
func ReasonOf(err error) Reason {
	var de *DecodeError
	if errors.As(err, &de) {
		return de.Reason
	}
	return ""
}

// fieldName renders an unknown field name for DecodeError.Field: as it is when it is short
// printable ASCII, quoted and truncated otherwise, so a hostile key cannot put megabytes or
// terminal escapes into logs.
func fieldName(key []byte) string {
	const maxShown = 64
	plain := len(key) > 0 && len(key) <= maxShown
	for _, c := range key {
		if c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return string(key)
	}
	if len(key) > maxShown {
		return strconv.QuoteToASCII(string(key[:maxShown])) + "..."
	}
	return strconv.QuoteToASCII(string(key))
}

// literal renders a piece of the input for a Detail message, truncated.
func literal(b []byte) string {
	const maxShown = 40
	if len(b) > maxShown {
		return strconv.QuoteToASCII(string(b[:maxShown])) + "..."
	}
	return string(b)
}
