// Package moderation holds the rules of moderation every role applies alike: the shared
// list of removed items (who removed or restored each, when and why), its order-independent
// merge, the set of removed items a writer of served lists filters by, and the filter itself
// (Top: the best k items that are not removed, re-ranked). It does no I/O: the list's copy in
// the object store (moderation/removed.json) is internal/moderation's, and the roles that
// apply it are the speed layer's merger (speed/merge), the batch (batch) and the API
// (serving/api), docs/moderation.md.
//
// Removing an item deletes nothing: its events stay in Kafka, the archive and the rollups,
// and every role keeps counting it; it only leaves the served lists, so a restore brings it
// back with its counts.
//
// In detail (DESIGN.md's file map has the line): the rules of moderation every role
// applies alike (docs/moderation.md (docs/moderation.md)): the shared list of removed
// items (each item's latest decision, removed or restored, with who, when and why;
// `Remove`, `Restore`), its order-independent merge (the later decision; removal at one
// instant), its versioned JSON, the removed `Set` (its `Digest` for fingerprints,
// `Want(k)` = k plus the removed) and `Top` (the first k not removed); no I/O
package moderation
