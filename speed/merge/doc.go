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
// reused and the result is marked partial, naming it, so a crashed partition's leaders do not
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
package merge
