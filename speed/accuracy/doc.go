// Package accuracy owns the speed layer's accuracy harness: it drives a few
// window.Partitions with a generated Zipf stream (trending/loadgen), items
// partitioned by Kafka's key hash as the speed workers see them, merges
// their lists with topk.Merge as the merger does, and compares every list
// with the stream's exact ground truth at several points of the stream and
// at the close of every calendar period.
//
// For each window and point the Report gives recall@K and precision@K, the
// largest and mean overcount of the reported items against the stated
// count-min bound (e/w)·N, how many exceeded it, and the heavy items (true
// count at least twice the K-th) that went missing. The goals (docs/requirements.md
// and the issue): an exact window equals the truth exactly; a sketch window's
// recall@100 is at least 0.99 at Zipf 1.1 with the month sketch's sizing scaled to
// the test; no heavy item is ever missing; and the fraction of reported
// items over the bound stays below e^-depth, the bound's failure
// probability. Report.Check lists the goals a run missed.
//
// # Recall and precision of top-K lists
//
// Both lists have K entries, so the plain set definitions coincide; ties at
// the K-th count make them differ. Let c be the true K-th count, R the
// reported list and T the true one:
//
//	precision@K = |{r in R : true(r) >= c}| / |R|
//	recall@K    = (|R ∩ {true > c}| + min(|R ∩ {true = c}|, K - |{true > c}|)) / K
//
// Precision asks whether every reported item deserves a place (an item tied
// with the K-th does); recall asks how many of the K places hold a right
// item, where an item that is strictly above c must be present and tied
// items are interchangeable.
//
// # The month sizing, scaled
//
// The capacity arithmetic (docs/requirements.md) sizes the month sketch so that
// the bound is under 5% of the K-th count: (e/2^18) x 4.7e9 = 48,600 against a
// 100th-place count of a million, a ratio of 4.86%. For a Zipf stream that
// ratio does not depend on the volume: with P partitions and p_K the K-th
// item's share of views, N per partition is V/P and the K-th count is V·p_K, so
//
//	ratio = (e/w) · (V/P) / (V·p_K) = e / (w · P · p_K)
//
// and the scaled width is the power of two nearest (in log scale) to
// e / (0.0486 · P · p_K). The default scenario's own numbers give back
// 2^18: P = 32 and p_K = 1e6 / 1.5e11. ScaledWidth computes it; the Report states the ratio
// each list actually had.
//
// In detail (DESIGN.md's file map has the line): the accuracy harness: drives
// hash-partitioned window partitions with a generated stream, merges as the merger does,
// reports recall and precision@K, overcount against the (e/w)N bound and missing heavy
// items, with the month sketch's sizing scaled to the test (docs/accuracy.md
// (docs/accuracy.md))
package accuracy
