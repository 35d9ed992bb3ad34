package event

import (
	"strconv"
	"time"
)

// AppendJSON appends the canonical encoding of e to dst: fields in the order item_id, count,
// ts, region, user_id, account_age_days; no spaces; ts as RFC 3339 in UTC with exactly three
// fraction digits (fixed width, so encoded timestamps sort as text); region and user_id
// omitted when empty, account_age_days when HasAccountAge is false. TS is converted to
// UTC and truncated to the millisecond. For every e that passes Validate, Decode of the
// result accepts it and returns e with TS normalised; AppendJSON does not validate, so an
// invalid e encodes to a message Decode rejects.
func (e Event) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"item_id":`...)
	dst = appendString(dst, e.ItemID)
	dst = append(dst, `,"count":`...)
	dst = strconv.AppendUint(dst, uint64(e.Count), 10)
	dst = append(dst, `,"ts":"`...)
	dst = appendTS(dst, time.UnixMilli(e.TS.UnixMilli()).UTC())
	dst = append(dst, '"')
	if e.Region != "" {
		dst = append(dst, `,"region":`...)
		dst = appendString(dst, e.Region)
	}
	if e.UserID != "" {
		dst = append(dst, `,"user_id":`...)
		dst = appendString(dst, e.UserID)
	}
	if e.HasAccountAge {
		dst = append(dst, `,"account_age_days":`...)
		dst = strconv.AppendInt(dst, int64(e.AccountAgeDays), 10)
	}
	return append(dst, '}')
}

// MarshalJSON lets encoding/json embed events (for example in a batch request body). It
// refuses invalid events, so a bad event is caught where it is built.
func (e Event) MarshalJSON() ([]byte, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	return e.AppendJSON(make([]byte, 0, 96)), nil
}

// UnmarshalJSON applies Decode's rules when an event is read through encoding/json.
func (e *Event) UnmarshalJSON(b []byte) error {
	v, err := Decode(b)
	if err != nil {
		return err
	}
	*e = v
	return nil
}

// appendTS writes t (UTC, whole milliseconds) as 2006-01-02T15:04:05.000Z. It is written out
// by hand because time.AppendFormat interprets its layout on every call and was most of
// AppendJSON's cost.
func appendTS(dst []byte, t time.Time) []byte {
	year, month, day := t.Date()
	if year < 0 || year > 9999 {
		return t.AppendFormat(dst, "2006-01-02T15:04:05.000Z07:00")
	}
	hour, minute, sec := t.Clock()
	ms := t.Nanosecond() / 1e6
	return append(dst,
		byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
		byte('0'+int(month)/10), byte('0'+int(month)%10), '-',
		byte('0'+day/10), byte('0'+day%10), 'T',
		byte('0'+hour/10), byte('0'+hour%10), ':',
		byte('0'+minute/10), byte('0'+minute%10), ':',
		byte('0'+sec/10), byte('0'+sec%10), '.',
		byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string. Valid events never contain control characters,
// but they are escaped anyway so that the output is always JSON.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"', '\\':
			dst = append(dst, '\\', c)
		default:
			dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
