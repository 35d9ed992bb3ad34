// Package topicrules holds the rules of trending topics that every role applies alike, with
// no I/O (docs/topics.md): the scores (volume, surge, decayed) and their settings, the
// weights of new accounts, hysteresis, the blocklist's matching, the review queue and its
// merge, and the names of topics lists. The speed layer's per-partition state is
// speed/topics; the state kept outside memory is internal/topicstore.
//
// It was model/topics, imported as rules beside speed/topics; the name says which of the two
// it is (issue 29).
package topicrules
