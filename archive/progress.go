package archive

import (
	"time"
)

// Progress is what the archiver has durably archived of one partition, kept as the JSON
// object <root>/views/_progress/pPPPP.json. The archiver writes it after a roll's objects
// are uploaded and before it commits the roll's offset, so everything it claims is already
// in S3. Every field only moves forward.
type Progress struct {
	Partition int32 `json:"partition"`
	// NextOffset is the first offset not yet archived: every message below it is in the
	// archive or in quarantine.
	NextOffset int64 `json:"next_offset"`
	// Watermark is the largest event time archived from this partition. Once it is past an
	// hour's end plus the allowed lateness, an event of that hour arriving now would be
	// later than allowed.
	Watermark time.Time `json:"watermark"`
	// CaughtUpAt is the latest wall-clock time at which the archiver had archived
	// everything the partition held. It lets an idle partition, whose watermark stands
	// still, count as complete: whatever reaches it later arrives after CaughtUpAt.
	CaughtUpAt time.Time `json:"caught_up_at,omitzero"`
	// Updated is when the marker was written.
	Updated time.Time `json:"updated"`
}

// passed returns the time up to which the partition is known archived: the later of its
// event-time watermark and the last moment it was caught up.
func (p Progress) passed() time.Time {
	if p.CaughtUpAt.After(p.Watermark) {
		return p.CaughtUpAt
	}
	return p.Watermark
}

// QuarantineRecord is one line of a quarantine object (<root>/quarantine/dt=.../*.jsonl):
// a message the archiver could not decode as an event, kept with its raw bytes so it can be
// inspected, fixed and replayed rather than lost.
type QuarantineRecord struct {
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
	// Reason is event.Reason's stable code (malformed_json, bad_count, ...).
	Reason string `json:"reason"`
	// Field and Detail are event.DecodeError's; Detail is for people and may change.
	Field  string `json:"field,omitempty"`
	Detail string `json:"detail"`
	// IngestTS is the Kafka record timestamp.
	IngestTS time.Time `json:"ingest_ts"`
	// Key and Value are the message's raw bytes (base64 in JSON).
	Key   []byte `json:"key"`
	Value []byte `json:"value"`
}
