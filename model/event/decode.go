package event

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Decode parses one wire event strictly (see the package documentation for the rules). A
// rejected event returns a *DecodeError whose Reason is stable. When a message has several
// problems, the first in document order is reported.
//
// Decode is hand-rolled rather than built on encoding/json because it runs once per Kafka
// message: it makes one allocation per event (the ItemID, Region and UserID strings share it) and is
// about six times faster than json.Unmarshal into a struct, which also could not detect
// duplicate keys or tell "3.0" from "3". It is safe for concurrent use.
func Decode(b []byte) (Event, error) {
	if len(b) > MaxEventBytes {
		return Event{}, &DecodeError{Reason: ReasonTooLarge,
			Detail: fmt.Sprintf("message is %d bytes, limit is %d", len(b), MaxEventBytes)}
	}
	var d decoder
	d.b = b
	if err := d.object(); err != nil {
		return Event{}, err
	}
	return d.fields().Event(), nil
}

// DecodeAt is Decode for an event whose sender may leave out ts (POST /v1/events): an event
// without one takes now, the receiving server's clock, truncated to the millisecond. Every
// other rule is Decode's; the Kafka consumers keep Decode, where ts is required.
func DecodeAt(b []byte, now time.Time) (Event, error) {
	if len(b) > MaxEventBytes {
		return Event{}, &DecodeError{Reason: ReasonTooLarge,
			Detail: fmt.Sprintf("message is %d bytes, limit is %d", len(b), MaxEventBytes)}
	}
	var d decoder
	d.b, d.defaultMs = b, now.UnixMilli()
	if err := d.object(); err != nil {
		return Event{}, err
	}
	return d.fields().Event(), nil
}

// Decoder decodes one message after another into memory it reuses, for a consumer that
// looks items up by their bytes (the speed worker's interning map): a valid event then
// costs no allocation at all, where Decode makes one. It applies exactly Decode's rules and
// returns the same errors. A Decoder is not safe for concurrent use; its zero value is
// ready.
type Decoder struct {
	d decoder
}

// Fields is an event as Decoder.Decode returns it, before its text is copied out: ItemID,
// Region and UserID alias the decoded message or the Decoder's buffers, so they are valid
// only until the next Decode on the same Decoder and while the message is unchanged.
type Fields struct {
	ItemID, Region, UserID []byte
	Count                  uint32
	// TSMilli is the event time in Unix milliseconds (Event.TS is the same instant).
	TSMilli        int64
	AccountAgeDays int32
	HasAccountAge  bool
}

// Decode parses b strictly, as the package's Decode does.
func (x *Decoder) Decode(b []byte) (Fields, error) {
	if len(b) > MaxEventBytes {
		return Fields{}, &DecodeError{Reason: ReasonTooLarge,
			Detail: fmt.Sprintf("message is %d bytes, limit is %d", len(b), MaxEventBytes)}
	}
	x.d.reset(b)
	if err := x.d.object(); err != nil {
		return Fields{}, err
	}
	return x.d.fields(), nil
}

// Event copies f into an Event with a single allocation: ItemID, Region and UserID are
// slices of one string. They share a lifetime (the Event), so none keeps another alive for
// longer.
func (f Fields) Event() Event {
	e := Event{Count: f.Count, TS: time.UnixMilli(f.TSMilli).UTC(), AccountAgeDays: f.AccountAgeDays, HasAccountAge: f.HasAccountAge}
	if len(f.Region) == 0 && len(f.UserID) == 0 {
		e.ItemID = string(f.ItemID)
		return e
	}
	var buf [MaxItemIDBytes + MaxRegionBytes + MaxUserIDBytes]byte
	n := copy(buf[:], f.ItemID)
	r := n + copy(buf[n:], f.Region)
	u := r + copy(buf[r:], f.UserID)
	s := string(buf[:u])
	e.ItemID, e.Region, e.UserID = s[:n], s[n:r], s[r:u]
	return e
}

const (
	bitItemID = 1 << iota
	bitCount
	bitTS
	bitRegion
	bitUserID
	bitAccountAge
)

// maxKeyBytes bounds the unescaped field names the decoder keeps; longer names cannot be
// known fields anyway.
const maxKeyBytes = 16

// decoder is the state of one Decode call. It lives on the stack: the escape buffers let
// values with JSON escapes be decoded without allocating.
type decoder struct {
	b    []byte
	i    int
	seen uint8

	// The values are kept as positions, not slices: storing a slice of the escape buffers
	// into the decoder would make escape analysis move the whole decoder to the heap.
	// A value is b[lo:hi], or buf[:hi] when esc is set (it had JSON escapes).
	itemLo, itemHi     int
	itemEsc            bool
	regionLo, regionHi int
	regionEsc          bool
	userLo, userHi     int
	userEsc            bool
	count              uint32
	age                int32
	ms                 int64
	defaultMs          int64 // DecodeAt: the ts of an event without one; 0 requires it

	// esc reports whether the last scanString unescaped into its buffer.
	esc bool

	itemBuf   [MaxItemIDBytes]byte
	regionBuf [MaxRegionBytes]byte
	userBuf   [MaxUserIDBytes]byte
	tsBuf     [40]byte
	keyBuf    [maxKeyBytes]byte
}

// reset readies a reused decoder for b. It clears the state, not the buffers (clearing
// them would cost more than the decode): a buffer is only read up to what the current
// message wrote into it. Every field outside the buffers must be reset here.
func (d *decoder) reset(b []byte) {
	d.b, d.i, d.seen = b, 0, 0
	d.itemLo, d.itemHi, d.itemEsc = 0, 0, false
	d.regionLo, d.regionHi, d.regionEsc = 0, 0, false
	d.userLo, d.userHi, d.userEsc = 0, 0, false
	d.count, d.age, d.ms, d.esc = 0, 0, 0, false
}

// fields returns the decoded values as slices of the input or of the escape buffers.
func (d *decoder) fields() Fields {
	f := Fields{ItemID: d.b[d.itemLo:d.itemHi], Region: d.b[d.regionLo:d.regionHi], UserID: d.b[d.userLo:d.userHi],
		Count: d.count, TSMilli: d.ms, AccountAgeDays: d.age, HasAccountAge: d.seen&bitAccountAge != 0}
	if d.itemEsc {
		f.ItemID = d.itemBuf[:d.itemHi]
	}
	if d.regionEsc {
		f.Region = d.regionBuf[:d.regionHi]
	}
	if d.userEsc {
		f.UserID = d.userBuf[:d.userHi]
	}
	return f
}

func (d *decoder) malformed(format string, args ...any) *DecodeError {
	return &DecodeError{Reason: ReasonMalformedJSON, Detail: fmt.Sprintf(format, args...)}
}

// unexpected reports the byte at d.i (or the end of input) where something else was due.
func (d *decoder) unexpected(want string) *DecodeError {
	if d.i >= len(d.b) {
		return d.malformed("unexpected end of message, want %s", want)
	}
	return d.malformed("unexpected %s at offset %d, want %s", strconv.QuoteRuneToASCII(rune(d.b[d.i])), d.i, want)
}

func (d *decoder) skipWS() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func (d *decoder) object() *DecodeError {
	d.skipWS()
	if d.i >= len(d.b) || d.b[d.i] != '{' {
		return d.unexpected("'{': an event is one JSON object")
	}
	d.i++
	d.skipWS()
	if d.i < len(d.b) && d.b[d.i] == '}' {
		d.i++
	} else {
		for {
			d.skipWS()
			if d.i >= len(d.b) || d.b[d.i] != '"' {
				return d.unexpected("a field name in double quotes")
			}
			bit, name := d.plainKey()
			if bit == 0 {
				key, n, _, err := d.scanString(d.keyBuf[:])
				if err != nil {
					return err
				}
				match := key
				if n > len(d.keyBuf) {
					match = nil // a truncated prefix of an escaped name must not match a field
				}
				switch string(match) {
				case FieldItemID:
					bit = bitItemID
				case FieldCount:
					bit = bitCount
				case FieldTS:
					bit = bitTS
				case FieldRegion:
					bit = bitRegion
				case FieldUserID:
					bit = bitUserID
				case FieldAccountAgeDays:
					bit = bitAccountAge
				default:
					return &DecodeError{Reason: ReasonUnknownField, Field: fieldName(key),
						Detail: "unknown field; the fields are item_id, count, ts, region, user_id and account_age_days"}
				}
				name = string(match)
			}
			if d.seen&bit != 0 {
				return &DecodeError{Reason: ReasonDuplicateField, Field: name,
					Detail: "appears more than once"}
			}
			d.seen |= bit
			d.skipWS()
			if d.i >= len(d.b) || d.b[d.i] != ':' {
				return d.unexpected("':' after a field name")
			}
			d.i++
			d.skipWS()
			var err *DecodeError
			switch bit {
			case bitItemID:
				err = d.itemID()
			case bitCount:
				err = d.countValue()
			case bitTS:
				err = d.tsValue()
			case bitRegion:
				err = d.regionValue()
			case bitUserID:
				err = d.userIDValue()
			case bitAccountAge:
				err = d.accountAgeValue()
			}
			if err != nil {
				return err
			}
			d.skipWS()
			if d.i >= len(d.b) {
				return d.unexpected("',' or '}'")
			}
			c := d.b[d.i]
			d.i++
			if c == '}' {
				break
			}
			if c != ',' {
				d.i--
				return d.unexpected("',' or '}'")
			}
		}
	}
	d.skipWS()
	if d.i < len(d.b) {
		return &DecodeError{Reason: ReasonTrailingData,
			Detail: fmt.Sprintf("%d bytes after the object at offset %d; send one event per message", len(d.b)-d.i, d.i)}
	}
	for _, f := range [...]struct {
		bit  uint8
		name string
	}{{bitItemID, FieldItemID}, {bitCount, FieldCount}, {bitTS, FieldTS}} {
		if f.bit == bitTS && d.seen&bitTS == 0 && d.defaultMs != 0 {
			d.ms, d.seen = d.defaultMs, d.seen|bitTS
			continue
		}
		if d.seen&f.bit == 0 {
			return &DecodeError{Reason: ReasonMissingField, Field: f.name, Detail: "is required"}
		}
	}
	return nil
}

// plainKey is the fast path for a field name written without escapes, as every producer
// writes them: with d.i at its opening quote, it matches the known names byte for byte and
// moves d.i past the closing quote. It returns bit 0, and leaves d.i, for anything else
// (an escaped or unknown name, or not a name at all): the general path decides those.
// It never decides differently: an unescaped name in quotes is its own content.
func (d *decoder) plainKey() (bit uint8, name string) {
	rest := d.b[d.i+1:]
	var key string
	switch {
	case hasPrefix(rest, FieldItemID+`"`):
		bit, key = bitItemID, FieldItemID
	case hasPrefix(rest, FieldCount+`"`):
		bit, key = bitCount, FieldCount
	case hasPrefix(rest, FieldTS+`"`):
		bit, key = bitTS, FieldTS
	case hasPrefix(rest, FieldRegion+`"`):
		bit, key = bitRegion, FieldRegion
	case hasPrefix(rest, FieldUserID+`"`):
		bit, key = bitUserID, FieldUserID
	case hasPrefix(rest, FieldAccountAgeDays+`"`):
		bit, key = bitAccountAge, FieldAccountAgeDays
	default:
		return 0, ""
	}
	d.i += 1 + len(key) + 1
	return bit, key
}

// typeError reports a value of the wrong JSON type, naming the type it found. A value that
// is not JSON at all is malformed_json instead.
func (d *decoder) typeError(reason Reason, field, want string) *DecodeError {
	got := ""
	rest := d.b[d.i:]
	switch {
	case len(rest) == 0:
		return d.unexpected("a value")
	case rest[0] == '"':
		got = "a string"
	case rest[0] == '-' || ('0' <= rest[0] && rest[0] <= '9'):
		got = "a number"
	case hasPrefix(rest, "null"):
		got = "null"
	case hasPrefix(rest, "true"), hasPrefix(rest, "false"):
		got = "a boolean"
	case rest[0] == '{':
		got = "an object"
	case rest[0] == '[':
		got = "an array"
	default:
		return d.unexpected("a value")
	}
	return &DecodeError{Reason: reason, Field: field, Detail: "must be " + want + ", got " + got}
}

func hasPrefix(b []byte, s string) bool { return len(b) >= len(s) && string(b[:len(s)]) == s }

func (d *decoder) itemID() (err *DecodeError) {
	d.itemEsc, d.itemLo, d.itemHi, err = d.textField(ReasonBadItemID, FieldItemID, d.itemBuf[:], 1, MaxItemIDBytes)
	return err
}

func (d *decoder) regionValue() (err *DecodeError) {
	d.regionEsc, d.regionLo, d.regionHi, err = d.textField(ReasonBadRegion, FieldRegion, d.regionBuf[:], 0, MaxRegionBytes)
	return err
}

func (d *decoder) userIDValue() (err *DecodeError) {
	d.userEsc, d.userLo, d.userHi, err = d.textField(ReasonBadUserID, FieldUserID, d.userBuf[:], 0, MaxUserIDBytes)
	return err
}

// textField scans one string field (item_id, region, user_id) and checks its length in bytes
// (minLen..maxLen) and its characters. It says where the value lies: d.b[lo:hi] when it had
// no escapes, buf[:hi] (lo 0, esc true) when its escapes were decoded into buf.
func (d *decoder) textField(reason Reason, field string, buf []byte, minLen, maxLen int) (esc bool, lo, hi int, err *DecodeError) {
	if d.i >= len(d.b) || d.b[d.i] != '"' {
		return false, 0, 0, d.typeError(reason, field, "a string")
	}
	s, n, badEscape, err := d.scanString(buf)
	if err != nil {
		return false, 0, 0, err
	}
	bad := func(detail string) (bool, int, int, *DecodeError) {
		return false, 0, 0, &DecodeError{Reason: reason, Field: field, Detail: detail}
	}
	switch {
	case n < minLen:
		return bad("must not be empty")
	case n > maxLen:
		return bad(fmt.Sprintf("must be at most %d bytes, got %d", maxLen, n))
	case badEscape:
		return bad("must be valid UTF-16 in escapes: lone surrogate \\uD800-\\uDFFF")
	}
	if p := textProblemBytes(s); p != "" {
		return bad(p)
	}
	if d.esc {
		return true, 0, n, nil
	}
	return false, d.i - 1 - n, d.i - 1, nil
}

func (d *decoder) accountAgeValue() *DecodeError {
	v, err := d.intField(ReasonBadAccountAge, FieldAccountAgeDays, 0, MaxAccountAgeDays, accountAgeRange)
	d.age = int32(v)
	return err
}

func (d *decoder) countValue() *DecodeError {
	v, err := d.intField(ReasonBadCount, FieldCount, MinCount, MaxCount, countRange)
	d.count = uint32(v)
	return err
}

// intField scans a non-negative integer literal in lo..hi; outOfRange words the error for a
// literal outside it. More digits than hi has cannot be in range (and could overflow), so
// they are refused before any arithmetic.
func (d *decoder) intField(reason Reason, field string, lo, hi uint64, outOfRange func(string) *DecodeError) (uint64, *DecodeError) {
	c := byte(0)
	if d.i < len(d.b) {
		c = d.b[d.i]
	}
	if c != '-' && (c < '0' || c > '9') {
		return 0, d.typeError(reason, field, "an integer")
	}
	lit, isInt, err := d.scanNumber()
	if err != nil {
		return 0, err
	}
	if !isInt {
		return 0, &DecodeError{Reason: reason, Field: field, Detail: "must be an integer literal, got " + literal(lit)}
	}
	if lit[0] == '-' || len(lit) > digits(hi) {
		return 0, outOfRange(literal(lit))
	}
	v := uint64(0)
	for _, c := range lit {
		v = v*10 + uint64(c-'0')
	}
	if v < lo || v > hi {
		return 0, outOfRange(literal(lit))
	}
	return v, nil
}

// digits is the number of decimal digits of n.
func digits(n uint64) int {
	k := 1
	for ; n >= 10; n /= 10 {
		k++
	}
	return k
}

func (d *decoder) tsValue() *DecodeError {
	c := byte(0)
	if d.i < len(d.b) {
		c = d.b[d.i]
	}
	bad := func(detail string) *DecodeError {
		return &DecodeError{Reason: ReasonBadTS, Field: FieldTS, Detail: detail}
	}
	switch {
	case c == '"':
		start := d.i
		s, n, _, err := d.scanString(d.tsBuf[:])
		if err != nil {
			return err
		}
		if n > len(d.tsBuf) {
			return bad("must be an RFC 3339 timestamp or Unix milliseconds, got a " + strconv.Itoa(n) + "-byte string")
		}
		ms, problem := parseRFC3339(s)
		if problem != "" {
			return bad(problem + ", got " + quoted(d.b[start+1:d.i-1]))
		}
		if ms < MinTSMilli || ms >= MaxTSMilli {
			return bad(tsRangeDetail + ", got " + quoted(d.b[start+1:d.i-1]))
		}
		d.ms = ms
		return nil
	case c == '-' || ('0' <= c && c <= '9'):
		lit, isInt, err := d.scanNumber()
		if err != nil {
			return err
		}
		if !isInt {
			return bad("Unix milliseconds must be an integer literal, got " + literal(lit))
		}
		// 13 digits hold every valid value; more cannot be in range and could overflow.
		if lit[0] == '-' || len(lit) > 13 {
			return bad(tsRangeDetail + ", got " + literal(lit) + " ms")
		}
		ms := int64(0)
		for _, c := range lit {
			ms = ms*10 + int64(c-'0')
		}
		if ms < MinTSMilli || ms >= MaxTSMilli {
			hint := ""
			if ms >= MinTSMilli/1000 && ms < MaxTSMilli/1000 {
				hint = " (that looks like Unix seconds: send milliseconds)"
			}
			return bad(tsRangeDetail + ", got " + literal(lit) + " ms" + hint)
		}
		d.ms = ms
		return nil
	default:
		return d.typeError(ReasonBadTS, FieldTS, "an RFC 3339 string or Unix milliseconds")
	}
}

func quoted(b []byte) string {
	if len(b) > 40 {
		return strconv.QuoteToASCII(string(b[:40])) + "..."
	}
	return strconv.QuoteToASCII(string(b))
}

// scanNumber reads a JSON number at d.i and returns its literal. isInt is false when it has
// a fraction or exponent part. Anything outside RFC 8259's number grammar is malformed.
func (d *decoder) scanNumber() (lit []byte, isInt bool, err *DecodeError) {
	b, start := d.b, d.i
	j := start
	if j < len(b) && b[j] == '-' {
		j++
	}
	switch {
	case j < len(b) && b[j] == '0':
		j++
		if j < len(b) && '0' <= b[j] && b[j] <= '9' {
			d.i = j
			return nil, false, d.malformed("leading zero in a number at offset %d", j-1)
		}
	case j < len(b) && '1' <= b[j] && b[j] <= '9':
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
	default:
		d.i = j
		return nil, false, d.unexpected("a digit")
	}
	isInt = true
	if j < len(b) && b[j] == '.' {
		isInt = false
		j++
		k := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		if j == k {
			d.i = j
			return nil, false, d.unexpected("a digit after '.'")
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		isInt = false
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		k := j
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		if j == k {
			d.i = j
			return nil, false, d.unexpected("a digit in the exponent")
		}
	}
	d.i = j
	return b[start:j], isInt, nil
}

// scanString reads the JSON string whose opening quote is at d.i. Without escapes, s is a
// slice of the input (no copy). With escapes, s is the unescaped text in buf. n is the
// content's length in bytes; when n > len(buf), s holds only a prefix and the caller reports
// the value too long. badEscape is set when a \u escape is a lone UTF-16 surrogate, which
// has no UTF-8 form. Raw bytes are not checked for UTF-8 here: the callers that care do.
func (d *decoder) scanString(buf []byte) (s []byte, n int, badEscape bool, err *DecodeError) {
	b := d.b
	start := d.i + 1
	j := start
	// Skip eight plain bytes at a time; the byte loop below finds which byte stopped it.
	for j+8 <= len(b) && plain8(binary.LittleEndian.Uint64(b[j:])) {
		j += 8
	}
	for ; j < len(b); j++ {
		c := b[j]
		if c == '"' {
			d.i = j + 1
			d.esc = false
			return b[start:j], j - start, false, nil
		}
		if c == '\\' {
			d.esc = true
			return d.scanEscaped(start, j, buf)
		}
		if c < 0x20 {
			d.i = j
			return nil, 0, false, d.malformed("raw control character 0x%02x in a string at offset %d: escape it", c, j)
		}
	}
	d.i = len(b)
	return nil, 0, false, d.malformed("unterminated string starting at offset %d", start-1)
}

// plain8 reports whether none of the eight bytes in w is a quote, a backslash or a control
// character (< 0x20): the bytes scanString stops at. The tests are the classic SWAR ones,
// which can report a stop byte that is not there (then the byte loop just looks) but never
// miss one.
func plain8(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	hasZero := func(v uint64) uint64 { return (v - ones) & ^v & highs }
	return (w-0x20*ones)&^w&highs|hasZero(w^'"'*ones)|hasZero(w^'\\'*ones) == 0
}

// scanEscaped is scanString's slow path, entered at the first backslash (offset j) of the
// string whose content starts at start.
func (d *decoder) scanEscaped(start, j int, buf []byte) (s []byte, n int, badEscape bool, err *DecodeError) {
	b := d.b
	out := buf[:0]
	full := false
	add := func(p []byte) {
		n += len(p)
		// Once a piece does not fit, stop: out stays a prefix of the content.
		if !full && len(out)+len(p) <= cap(out) {
			out = append(out, p...)
		} else {
			full = true
		}
	}
	add(b[start:j])
	var rb [utf8.UTFMax]byte
	for j < len(b) {
		c := b[j]
		switch {
		case c == '"':
			d.i = j + 1
			return out, n, badEscape, nil
		case c < 0x20:
			d.i = j
			return nil, 0, false, d.malformed("raw control character 0x%02x in a string at offset %d: escape it", c, j)
		case c != '\\':
			k := j + 1
			for k < len(b) && b[k] != '"' && b[k] != '\\' && b[k] >= 0x20 {
				k++
			}
			add(b[j:k])
			j = k
			continue
		}
		// A backslash escape.
		if j+1 >= len(b) {
			break
		}
		e := b[j+1]
		var one byte
		switch e {
		case '"', '\\', '/':
			one = e
		case 'b':
			one = '\b'
		case 'f':
			one = '\f'
		case 'n':
			one = '\n'
		case 'r':
			one = '\r'
		case 't':
			one = '\t'
		case 'u':
			r, ok := hex4(b, j+2)
			if !ok {
				d.i = j
				return nil, 0, false, d.malformed("bad \\u escape at offset %d: want four hex digits", j)
			}
			j += 6
			if utf16.IsSurrogate(r) {
				r2, ok2 := rune(0), false
				if r < 0xdc00 && j+1 < len(b) && b[j] == '\\' && b[j+1] == 'u' {
					r2, ok2 = hex4(b, j+2)
				}
				if ok2 && r2 >= 0xdc00 && r2 <= 0xdfff {
					r = utf16.DecodeRune(r, r2)
					j += 6
				} else {
					badEscape = true
					r = utf8.RuneError
				}
			}
			add(rb[:utf8.EncodeRune(rb[:], r)])
			continue
		default:
			d.i = j
			return nil, 0, false, d.malformed("bad escape \\%s at offset %d", strconv.QuoteRuneToASCII(rune(e)), j)
		}
		rb[0] = one
		add(rb[:1])
		j += 2
	}
	d.i = len(b)
	return nil, 0, false, d.malformed("unterminated string starting at offset %d", start-1)
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
