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
	// Watermark is the event time this partition is archived up to: the largest over its
	// rolls of each roll's low quantile of event time (WatermarkQuantile), capped by when
	// the roll's newest message entered the log. Not the largest event time: one event
	// dated ahead cannot move it, and events dated beyond MaxFuture are quarantined. Once
	// it is past an hour's end plus the allowed lateness, an event of that hour arriving now
	// is later than allowed.
	Watermark time.Time `json:"watermark"`
	// CaughtUpAt is the latest wall-clock time at which the archiver had archived
	// everything the partition held and nothing new had come for a while: RollAge, or
	// Config.ReplayQuiet when the partition's producer writes the past (LagMS). It lets an
	// idle partition, whose watermark stands still, count as complete: whatever reaches it
	// later arrives after CaughtUpAt, and is late data (a DirtyMark) for the hours it closed.
	CaughtUpAt time.Time `json:"caught_up_at,omitzero"`
	// LagMS is how far behind the log the partition's last roll with events was written:
	// the median over its events of the Kafka timestamp minus the event time, in
	// milliseconds. About a second for a live producer; hours or days for a replay, whose
	// pause must last Config.ReplayQuiet before the partition counts as caught up.
	LagMS int64 `json:"lag_ms,omitempty"`
	// Updated is when the marker was written.
	Updated time.Time `json:"updated"`
}

// TopicManifest is what the archiver learnt of the topic from Kafka's metadata, kept as
// <root>/views/_topic.json: how many partitions it has. Complete requires a progress marker
// past the hour from each of them, so a partition whose archiver never ran (or is stuck)
// holds every later hour open instead of being complete by omission.
type TopicManifest struct {
	Topic      string    `json:"topic"`
	Partitions int       `json:"partitions"`
	Updated    time.Time `json:"updated"`
}

// DirtyMark is a late-data marker, <root>/views/_dirty/dt=YYYY-MM-DD/hour=HH/pPPPP-oF-oL.json:
// the roll of partition Partition, offsets FirstOffset..LastOffset, wrote events into Hour
// although the partition's progress (Progress, the later of its watermark and caught-up
// time) had already passed the hour's end, so a batch may have computed the hour without
// them. The batch recomputes the hour and clears the marker (`trending batch run --dirty`,
// the nightly run, the built-in scheduler).
type DirtyMark struct {
	Partition   int32     `json:"partition"`
	FirstOffset int64     `json:"first_offset"`
	LastOffset  int64     `json:"last_offset"`
	Hour        time.Time `json:"hour"`
	Progress    time.Time `json:"progress"`
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
