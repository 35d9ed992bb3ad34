// Package topicstore is where trending topics' state lives outside memory: the shared
// review queue in the bucket every role already uses (topics/review.json, review.go) or in a
// local file (file.go), and the hourly topic sketches the surge baseline is read from
// (topics/hours/..., hours.go). It is the I/O beside model/topicrules (the rules, which do none)
// and speed/topics (which counts in memory).
//
// In detail (DESIGN.md's file map has the line): trending topics' state outside memory:
// `review.go`: the review queue shared by every role as one object `topics/review.json` in
// the bucket, an ETag-conditional read-merge-write over `Review.Merge` (`SyncReview`,
// `RunReviewSync`), synced by speed, up and serve, read by the batch (`LoadReview`: its
// held topics stay off the exact lists) and decided by `trending topics review` and
// `/v1/topics/review`; `file.go`: the local review-queue file (`ReadReviewFile`,
// `WriteReviewFile`, an atomic replace) of `trending topics review --queue`, `topics demo
// --queue` and `batch --topics-review`; `blocklist.go`: `OpenBlocklist`, the blocklist
// file behind `model/topicrules.Blocklist` (a `BlocklistSource` re-read when its modification
// time or size changes); `hours.go`: `Hours`, each partition's closed hourly topic
// sketches, `topics/hours/<topic>/<partition>/<YYYY-MM-DDTHH>Z.cms` (a rewrite replaces;
// the baseline reads its keys without listing; `Prune` past the baseline depth)
package topicstore

import (
	"trending/model/topicrules"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"trending/internal/objstore"
)

// ReviewKey is the object that holds the shared review queue in the bucket every role
// already uses: the source of truth for decisions in a split deployment. Its bytes are the
// queue's versioned JSON encoding (topicrules.Review.MarshalJSON).
const ReviewKey = "topics/review.json"

// syncAttempts bounds SyncReview's read-merge-write loop under contention.
const syncAttempts = 8

// SyncReview merges the shared queue under key into r and writes the union back: r's new
// holds and decisions reach the object, and decisions made elsewhere (`trending topics
// review`, /v1/topics/review on any process) reach r. The write is conditional on the
// object's ETag (If-Match, or If-None-Match for the first one), so a concurrent writer is
// never overwritten: on a conflict it reads again and retries. Merge is commutative as well,
// so replicas converge even where a store ignored the condition. Nothing is written when the
// object already holds r's state. Decisions older than DefaultDecisionTTL, and pending
// entries not seen for as long, are dropped (topicrules.Review.Prune). A corrupt object is an error and is left alone: it holds
// operators' decisions.
func SyncReview(ctx context.Context, st *objstore.Client, key string, r *topicrules.Review) error {
	var last error
	for attempt := range syncAttempts {
		if attempt > 0 {
			// Someone wrote in between, or the read was torn (the embedded store serves a
			// file being rewritten): back off a little, with jitter so two workers that
			// collided do not collide again.
			d := time.Duration(attempt) * time.Duration(5+rand.IntN(20)) * time.Millisecond
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(d):
			}
		}
		b, etag, err := st.GetVersion(ctx, key)
		switch {
		case errors.Is(err, objstore.ErrNotFound):
			b, etag = nil, ""
		case err != nil:
			if last = fmt.Errorf("sync review queue: %w", err); objstore.IsRetryable(err) {
				continue
			}
			return last
		default:
			remote := topicrules.NewReview(0)
			if err := remote.UnmarshalJSON(b); err != nil {
				// Retried, in case the read was torn; if it stays corrupt nothing is written.
				last = fmt.Errorf("sync review queue %s: %w", key, err)
				continue
			}
			r.Merge(remote)
		}
		// Expiry happens here, the one place every replica passes through: each drops the
		// same entries (the rule reads only their timestamps), so a merge cannot revive one.
		r.Prune(time.Now(), 0)
		out, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("sync review queue: encode: %w", err)
		}
		if bytes.Equal(out, b) {
			return nil
		}
		if etag == "" {
			_, err = st.PutIfAbsent(ctx, key, out)
		} else {
			_, err = st.PutIfMatch(ctx, key, out, etag)
		}
		if err == nil {
			return nil
		}
		last = fmt.Errorf("sync review queue: %w", err)
		if !errors.Is(err, objstore.ErrExists) && !errors.Is(err, objstore.ErrChanged) && !objstore.IsRetryable(err) {
			return last
		}
	}
	if errors.Is(last, objstore.ErrExists) || errors.Is(last, objstore.ErrChanged) {
		return fmt.Errorf("sync review queue %s: %w after %d attempts", key, ErrReviewContended, syncAttempts)
	}
	return last
}

// LoadReview reads the shared queue under key without writing it: for readers that decide
// nothing, such as the batch layer keeping held topics off its exact lists. No object yet is
// an empty queue (nobody held anything). A read that fails or does not decode is retried a few
// times (the embedded store serves a file being rewritten), then returned as an error: a
// reader that cannot see the queue must not act as if nothing were held.
func LoadReview(ctx context.Context, st *objstore.Client, key string) (*topicrules.Review, error) {
	var last error
	for attempt := range syncAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(attempt) * time.Duration(5+rand.IntN(20)) * time.Millisecond):
			}
		}
		b, _, err := st.GetVersion(ctx, key)
		switch {
		case errors.Is(err, objstore.ErrNotFound):
			return topicrules.NewReview(0), nil
		case err != nil:
			if last = fmt.Errorf("read review queue: %w", err); !objstore.IsRetryable(err) {
				return nil, last
			}
			continue
		}
		r := topicrules.NewReview(0)
		if err := r.UnmarshalJSON(b); err != nil {
			last = fmt.Errorf("read review queue %s: %w", key, err)
			continue
		}
		return r, nil
	}
	return nil, last
}

// RunReviewSync calls SyncReview at once and then every interval until ctx ends. A failed
// sync is logged and retried at the next interval: the lists keep being published with the
// decisions known so far (a pending new topic stays held, which is the safe side).
func RunReviewSync(ctx context.Context, st *objstore.Client, key string, r *topicrules.Review, every time.Duration, log *slog.Logger) {
	if every <= 0 {
		panic("BUG: review sync interval must be positive")
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := SyncReview(ctx, st, key, r); err != nil && ctx.Err() == nil && log != nil {
			log.Warn("review queue sync failed", "key", key, "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
