// Package event owns the view event: its Go form, its strict wire decoder and its canonical
// encoding. Every other part of the system (speed workers, archiver, HTTP ingest, loadgen)
// receives events through Decode or builds them in Go and checks them with Validate, so the
// rules below are enforced in exactly one place. schemas/event.schema.json states the same
// rules for other languages; a test keeps the two in step.
//
// # Wire format
//
// One event is one JSON object, one per Kafka message, keyed by item_id:
//
//	{"item_id": "V7", "count": 3, "ts": "2026-11-14T10:05:12Z", "region": "eu"}
//
// Events are pre-summed: one event per item per server per second, carrying how many views
// that was.
//
//   - item_id (required): a string of 1 to 256 bytes of valid UTF-8 with no control
//     characters (U+0000-U+001F, U+007F, U+0080-U+009F). JSON escapes are decoded before the
//     checks; a lone UTF-16 surrogate escape such as "\ud800" is rejected, not replaced.
//   - count (required): an integer literal from 1 to 1,000,000. 0, negatives, fractions and
//     any literal with a fraction or exponent part ("3.0", "3e0") are rejected: producers
//     write integers, and a float on the wire means a float accumulator upstream.
//   - ts (required): event time, in one of two forms. An RFC 3339 string with a 1 to 9 digit
//     fraction and any offset ("2026-11-14T10:05:12.345+01:00"; "T"/"Z" may be lower case;
//     no leap second 60); or Unix milliseconds as a JSON integer literal (1794650712000).
//     Either is normalised to UTC and truncated, not rounded, to the millisecond, so an
//     event never moves into the next second or minute bucket. It must lie in
//     [2000-01-01T00:00:00Z, 2100-01-01T00:00:00Z): this catches Unix seconds sent as
//     milliseconds (1970) and microseconds sent as milliseconds (year 58000). The decoder
//     does not compare ts with the clock; lateness is the window's business.
//   - region (optional): a string of at most 64 bytes under the item_id character rules.
//     Absent and "" both mean no region.
//   - user_id (optional): a string of at most 128 bytes under the same character rules, the
//     user who mentioned the item; trending topics (speed/topics) count a user once per
//     topic per 15 minutes. Absent and "" both mean none. Such events are not pre-summed.
//   - account_age_days (optional): an integer literal from 0 to 100,000, the account's age
//     in whole days; trending topics weigh a new account's mention 3 tenths. Absent means
//     established (HasAccountAge false), which is not the same as 0 (created today).
//
// Everything else is rejected, with a stable Reason:
//
//   - unknown fields (unknown_field, naming the field): a typo such as "itemid" must not
//     silently drop data. The price is ordering on schema changes: deploy the consumers that
//     know a new field before the producers that send it.
//   - a field given twice (duplicate_field), null for any field (bad_<field>), a value of
//     the wrong JSON type (bad_<field>), a missing required field (missing_field);
//   - anything but whitespace after the object (trailing_data), input that is not one JSON
//     object (malformed_json), and messages over 4096 bytes (too_large). The largest valid
//     event, with every character of item_id, region and user_id written as a \uXXXX
//     escape, is about 2.8 KiB, so the limit never rejects a valid event.
//
// AppendJSON writes the canonical form: fields in the order above, no spaces, ts as RFC 3339
// UTC with exactly three fraction digits, region and user_id omitted when empty and
// account_age_days when absent. Decoding the canonical
// form gives back the same Event.
package event
