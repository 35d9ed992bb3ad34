// Package topics owns trending topics (issue 9; the requirements and numbers are in
// docs/requirements.md, the design in docs/topics.md): per-region and worldwide lists
// of the topics people mention most or most unusually, and the controls that keep one
// account from putting junk on them.
//
// The pieces, each usable alone:
//
//   - Scores (score.go): volume (the window count, what the core does), surge, the smoothed
//     ratio (current + c) / (expected + c) behind a floor, and decayed, exponentially decayed
//     counts with a half-life; topicrules.Hysteresis keeps a list from flickering (enter at 3, stay
//     until below 2).
//   - Abuse controls: Dedupe counts a user once per topic per 15 minutes in a fixed-size
//     table of hashed pairs; Weight counts new accounts 3 tenths and established ones 10,
//     and Share tracks the part of a topic's weight that came from new accounts; topicrules.Blocklist
//     drops banned terms and reloads its file when it changes; topicrules.Review holds never-seen
//     topics that rise fast until a person approves or rejects them.
//   - State (state.go): one partition's counts. Every mention updates the (region, topic)
//     key and the worldwide key in one count-min sketch per minute; a 15-minute window is
//     the running sum of the minute sketches (add the newest, subtract the expired);
//     hourly sketches give the 7-day same-hour baseline; a bounded candidate set per list
//     names the topics, since a sketch cannot list keys. Memory is fixed: a flood of a
//     million junk tags changes counters, not sizes.
//   - Sizing (sizing.go): the sizing arithmetic (1.31 MB a minute sketch, 79 MB for 60,
//     about 1.35 mentions of overcount a minute at 32,500 counts) as a pure function.
//
// Counts are kept in tenths of a mention, so that a new account's 3 tenths add exactly;
// every count the package returns is in mentions (tenths / 10).
//
// A State is owned by one goroutine, like speed/window's partition state; topicrules.Blocklist and
// topicrules.Review are safe for concurrent use because an operator command and a reload timer touch
// them from outside that goroutine.
//
// In detail (DESIGN.md's file map has the line): trending topics: regional and worldwide
// lists by volume, surge or decayed score with hysteresis; fixed-size user dedupe,
// new-account tenths and share, a reloading blocklist, the review queue and its HTTP
// handler; per-partition state (minute and hourly sketches, candidates, checksummed
// snapshot, version 2); `baseline.go`: the hourly sketches at the minute width, closed
// once no mention can reach them, waiting in `Unsaved` (at most `UnsavedHours`) until the
// caller saved them, the baseline's same-hour sketches given by the caller
// (`NeedBaseline`, `SetBaseline`) or still in memory, a presence bitmap per closed hour
// for the hold rule, and `Baseline()` (days used, missing, unavailable; the expected
// count's bound); the State does no I/O; the sizing, with the baseline's memory and
// object-store bytes a day (docs/topics.md (docs/topics.md)). In the worker
// (`speed/worker/topics.go`, on with `--topics eu,us`) every event is a mention; lists are
// published under the typed key `model.TopicsKey(region, score)` (window `topics`, group =
// the region, score = volume, surge or decayed; stored and served under the name
// `topics/<region>/<score>`, as before the key was typed); scores are ratios, so the
// merger sorts floats, still exact because the stream is partitioned by topic; the
// checkpoint bundles the topics snapshot beside the window snapshot;
// `speed/worker/topicshours.go`: at each publish tick, outside the partition's lock, the
// closed hours saved, the baseline loaded (after an hour change or a restore; a failed
// read retried every 30 s) and hours past the baseline depth pruned through
// `internal/topicstore`, each call bounded to 10 s (`trending_speed_topics_hours_total`,
// `trending_speed_topics_baseline_days`); each topics partial carries `model.Baseline`,
// the merger the worst partition's, the API `baseline`; `demo.go`: the synthetic week of
// `trending topics demo` (`DemoConfig`, `FeedDemo`)
package topics
