// Package merge turns the speed workers' per-partition top lists ("partials", topic
// trending.partials) into the served lists: for each window it merges the newest list of
// every partition into the global top K and writes the result to the serving store with a
// version (the store it is given attaches the items' titles, internal/titles through
// store.WithTitles, the same for the batch's lists).
//
// Because events are partitioned by item, every item's whole count lives in one partition and
// the merge of local top lists is exact (the proof is in docs/requirements.md, "The exact
// merge"); with sketches each partition reports its top m*K so sketch noise cannot push a
// leader out. A partition whose list is missing or stale is not dropped: its last list is
// reused and the result is marked incomplete (JSON `partial`), naming it, so a crashed partition's leaders do not
// vanish.
//
// Every served list says what it is (Status): the speed layer's counts are never
// claimed exact, since events later than the allowed lateness are missing from them. A
// calendar window's list is live while any partition still counts in it and provisional once
// every partition the merger holds has sent its final list; its dropped_late is the sum of
// the partitions' counts of events too late for it, which late-only partials raise after the
// final lists. A merger started after a window's final lists fell out of its lookback holds
// none of them, so it publishes no late-drop update for that window: the stored list keeps
// the count it had (the batch's exact list replaces it anyway).
//
// In detail (DESIGN.md's file map has the line): `trending merge`: partials (wire type
// `model.Partial`) -> global top K per window (and per group value: a partition that sent
// no list of a region is missing from it only when it is stale or `groups_full`, not when
// it never saw the region; `missingFromGroup`, through a shard merger's members too), a
// salted item's counts summed over the partitions reporting it before ranking
// (`mergeCounts`; in sketch windows the list's bound is the sum of its parts' bounds),
// stale partitions reused and marked (the staleness rule applied to partitions, also
// through a shard partial's `Members`), one `window_start` for every partition of a live
// list (`spanStart`: a partition already past it merged from its last list of that start,
// one more than a bucket behind marked stale), versioned writes (titles and thumbnails are
// attached by the store it is given, `store.WithTitles`, as for the batch); the status of
// each list (live, provisional once every partition's final list is in) and `dropped_late`
// summed from late-only partials; `alltime.go`: the live all-time list from the batch's
// base (`all-base`) and the partitions' exact counts since its boundary (`all-since`
// partials), with the threshold test; `shard.go`: the two-level merge (`Config.Shard`: a
// shard merger reads one partials partition and emits one shard partial per list, its best
// 3 x K, every salted item's sum, each member's version, to `trending.partials.top`; the
// top merger is the ordinary one over them; `--level shard|top`); a decayed window's
// partials (scores as of each partition's as-of) brought to the newest as-of by
// 2^(-dt/half-life) and ranked, those without the configured half-life dropped
// (`mergeDecayed`); the merger and a shard merger dispatch on the newest partial's
// `KindOf()`, not on window names or which fields are set
package merge
