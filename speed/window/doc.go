// Package window owns the per-partition window state of the speed layer:
// the minute buckets, the running totals and sketches, and the candidate
// sets from which each partition reports its top M*K items for every
// configured window (the sliding hour, day and month, the calendar hour,
// day and month, and all time: docs/requirements.md), and the snapshot that makes
// the state recoverable. It does no I/O and knows nothing of Kafka: the runtime feeds
// it events, asks for lists, and stores its snapshots.
//
// # Time
//
// Event time picks the minute bucket. The watermark is the largest event
// time seen minus Config.AllowedLateness, and AsOf is the watermark
// truncated to the minute: every minute that ends at or before it is
// closed. Sliding windows and open calendar windows are answered as of
// AsOf, so the state is a function of the event sequence alone and replaying
// the same log gives the same state whatever the wall clock says. (AdvanceTo
// is the one exception: it moves an idle partition's watermark by the wall
// clock.)
//
// An event in an open minute is Counted. An event whose minute has closed is
// Late if some window still covers that minute: it is counted in the
// minute's bucket (where that is still kept) and in every window that
// covers it, and nowhere else. An event no window covers is TooLate and
// counted nowhere; the archive has it and the batch layer corrects the
// closed calendar windows. A calendar period closes when AsOf reaches its
// end: its final list goes to TakeClosed and its state is dropped, so a
// later event of that period is TooLate for it. An all-time window covers
// every closed minute, so with one configured no event is TooLate: a late
// event is at least counted there.
//
// A calendar window counts the events too late for it, whatever the outcome
// (Late or TooLate), against the start of the closed period they belong to:
// List.DroppedLate, reported after the final list by TakeLate, for periods
// that ended up to LateRetention ago. The served list of a closed calendar
// window says so (dropped_late) until the batch layer replaces it.
//
// # Sliding windows: add the newest, subtract the expired
//
// A sliding window is the Length/Bucket newest buckets, the newest being the
// bucket that holds the last closed minute. When a minute closes it is added to
// every window's running totals; when a bucket leaves a window its counts are
// subtracted. Nothing is ever re-summed: the work per minute is proportional to
// the distinct items of the minutes entering and leaving, not to the window.
// With minute buckets the window is exactly Length long; with hourly buckets
// the day is 23 to 24 hours long (24 hourly buckets, the newest being the open
// hour), because 24 hourly buckets hold about 4 times fewer entries than 1,440
// minute buckets (24 x 30M vs 1,440 x 2M distinct items in the capacity
// arithmetic of docs/requirements.md).
//
// # Exact state
//
// Items are interned per partition when their event arrives: a string maps
// to a dense uint32 handle, reference-counted by the open minutes, buckets,
// calendar totals and candidate sets that hold it, and freed (for reuse)
// when the last one lets go. The two newest open minutes count in sparse
// sets indexed by handle, so an event costs one intern lookup and an
// array increment, and closing a minute hashes nothing. Ids of up to 15
// bytes are looked up in a table that keeps their bytes inline (usually one
// cache miss, no pointer to follow), longer ones in a map; AddBytes looks an
// id up from a message's bytes without allocating. Older open minutes
// (a lateness over a minute) count in maps. A closed minute is frozen into
// an array of packed (handle, count) pairs, 8 bytes an entry, which is what
// the minute ring and the hourly and daily rings keep. Running totals of an
// exact window are a dense []uint64 indexed by handle: adding a minute and
// subtracting an expired bucket are array updates. A late event for a
// closed bucket goes to the bucket's small side map. BenchmarkBytesPerEntry
// measures the memory per (minute, item) entry against the 50 bytes the
// capacity arithmetic assumes.
//
// # Sketch windows
//
// Windows too large to count exactly (by default those over 24 hours: the
// sliding month and the calendar month) use count-min sketches from
// trending/speed/sketch: one per bucket plus a running sketch (standard
// update, since buckets are subtracted from it cell by cell), and a
// candidate set of items whose running estimate reached the candidate floor
// when last counted (see candidates). Every hour of watermark time the
// candidates are re-estimated and those under the floor dropped. Top ranks
// the candidates by their current estimate, and the list carries the
// sketch's error bound for the window's N and Exact=false. A closed
// minute reaches each sketch as one batch (sketch.AddHashes, with the hashes
// the partition computed once for every sketch window), which leaves the
// same cells as adding its entries one by one but waits less on memory.
//
// # Frequent windows
//
// A window in frequent mode (windowset.Frequent, frequentwin.go) counts in
// Misra-Gries summaries of WindowConfig.Capacity counters
// (trending/speed/frequent): a sliding window one per bucket, merged as it
// slides by two-stacks aggregation, a calendar period or all time one running
// summary. Its lists carry proven bounds: each Count is a lower bound,
// Count+MaxError an upper bound, and no item left out has more than Cutoff
// views. Every summary is kept compacted, so the state is a function of the
// events, not of their order within a minute or of a restore.
//
// # All-time windows
//
// An all-time window never expires: closed minutes and late events are
// added and nothing is ever subtracted (all-time counts, which
// survive a failure because the snapshot holds them with the offset they
// include). Exact mode keeps one running total per item ever seen, in a
// dense slice like a calendar window's, so its memory grows with the
// catalog. Sketch mode (the default "all") keeps one running count-min
// sketch, conservative if Config.Sketch.Conservative, and a candidate set
// as above; because counts only grow, the candidate set misses no item that
// belongs in the top M*K. The list's bound is sketch.BoundFor at the
// window's N, which grows with it. Conservative update depends on the order
// of updates, so a closed minute's entries reach the calendar and all-time
// sketches sorted by hash: the cells are a function of the minute's counts,
// the same after a restore (whose open minutes lose their arrival order).
//
// # Lists
//
// Top scans a window's totals (or candidates) with a size-M*K heap
// (trending/speed/topk); ties rank by item ascending, so lists are
// deterministic. Each partition reports its top M*K so that the merge of
// partition lists is exact for exact windows (items are partitioned by id)
// and robust to sketch noise for sketch windows (docs/requirements.md, "The exact merge").
//
// # Tracked items
//
// A salted item's events are spread over several partitions (docs/scale-out.md, "Hot
// keys"), so each holds part of its count and the merger sums the parts. The runtime calls
// Track for every salted event; from then on every list also carries, in Tracked, the item's
// count in that window however it ranks, so every part reaches the sum (tracked.go). The
// tracked set is stored beside the snapshot by the runtime (TrackedItems, SetTracked).
//
// # Snapshots
//
// MarshalBinary encodes the whole state (docs/format/snapshot.md): open
// minutes, closed buckets, sketches, candidates, watermark, counters and
// unclaimed closed lists, with items named by string in sorted order, so the
// same state always gives the same bytes, and Restore followed by the rest
// of the log gives the same bytes as an uninterrupted run. Running totals
// and running sketches of sliding windows are not stored: Restore re-sums
// them from the buckets, which is cheaper to store and a consistency check
// in itself. All-time totals and sketches have no buckets and are stored.
//
// SnapshotIncremental (incremental.go, format version 5; 4 is still read) splits the same
// state into immutable pieces, encoded once each (closed buckets' packed entries, bucket
// sketches), and
// a small manifest state that refers to them; open buckets, exact calendar totals and a
// sliding sketch window's open bucket are re-derived from the kept buckets on restore, and
// calendar and all-time sketches are a stored base plus a journal of updates replayed from
// the minute ring. It
// runs under the partition's lock at the cost of a copy of the open state; its Encode runs
// outside it. RestoreIncremental reads both kinds.
//
// In detail (DESIGN.md's file map has the line): one partition's window state (its
// windows' kinds and modes are `windowset.Kind`/`Mode`, a calendar window's period a
// `model.Period`; `FromSet` takes a window set as it is): sliding windows from minute
// buckets (add newest, subtract expired), calendar windows, the all-time window (exact
// running totals, or one running sketch + candidates), the exact counts since the all-time
// boundary B (`since.go`: daily buckets from B, `SetBoundary`, `Since`), exact or sketch +
// candidates per window, watermark and lateness, per closed calendar period the events too
// late for it (`TakeLate`); `live.go`: the live lists (`Live`, `LiveAll`), the open
// minutes on top of the closed state without changing it (each list exactly the events of
// its span `[Start, End]`: an open minute before a sliding window's start is not counted,
// and the start follows the as-of minute alone), each publish costing the events since the
// previous one (`LiveAll` keeps, per window, the items above a floor with their live
// counts across closing minutes, which change no live count; a bucket starting to expire
// lowers only its own items; a list is rebuilt from scratch only when that set runs short
// of the floor, a calendar period opens, or a sketch window's candidates start a new epoch
// or its buckets expire; items far under every floor cost one read of a per-item bound: 2
// bytes an item per exact window, plus 4 for its row, 12 with the default windows, beside
// the state); snapshot and restore (format (docs/format/snapshot.md)); `decayed.go`:
// decayed windows ("trending now": every view counts 2^(-age/half-life)), exact (one
// float64 value per item against a fixed epoch moved by exact powers of two, items under
// 2^-10 of a view forgotten hourly) or by sketch (`sketch.Float` and candidates), their
// live lists from the last list and the items counted since, `decayed_snap.go` their
// snapshot sections and pieces (exact: a base of every value stored once, then a delta of
// what changed since; sketch: the float sketch whole). Items are interned to uint32
// handles (ids up to 15 bytes in a table with the bytes inline, longer ones in a map;
// `AddBytes` counts straight from message bytes); a closed bucket is a packed array of
// 8-byte (handle, count) entries: 34.9 B per (minute, item) against the 50 B the capacity
// arithmetic (docs/requirements.md#capacity) assumes; `tracked.go`: the salted items
// reported in full (`Track`; every list's `Tracked`: exact windows every nonzero count,
// sketch windows the estimate while the item's last salted event is in the window; kept
// while a window reaches back to it; stored by the worker beside the snapshot)
package window
