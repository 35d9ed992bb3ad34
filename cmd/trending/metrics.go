package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
	"trending/internal/topicstore"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"trending/internal/objstore"
	"trending/model/topicrules"
)

// metricsRole listens on addr for /metrics and /healthz, for commands without an HTTP API of
// their own (speed, merge, archive), and returns the role that serves until its context ends
// (then drains); "" returns a role that does nothing. Listening here, before any role runs,
// reports a taken port as a usage error at once.
func metricsRole(addr string, a *app) (stage, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, usagef("--metrics-addr %s: %v (pick a free port, or \"\" to disable)", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(a.registry, promhttp.HandlerOpts{Registry: a.registry}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	return stage{{"metrics", func(ctx context.Context) error {
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(ln) }()
		select {
		case err := <-errc:
			return fmt.Errorf("metrics server: %w", err)
		case <-ctx.Done():
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	}}}, nil
}

// reviewSyncRole keeps review merged with the shared review queue in the bucket
// (topicstore.ReviewKey) every interval until its context ends, then syncs once more, so what
// the stage before it (the speed workers) held last reaches the bucket.
func reviewSyncRole(obj *objstore.Client, review *topicrules.Review, every time.Duration, a *app) role {
	return role{"review sync", func(ctx context.Context) error {
		log := a.log.With("part", "review")
		topicstore.RunReviewSync(ctx, obj, topicstore.ReviewKey, review, every, log)
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := topicstore.SyncReview(lctx, obj, topicstore.ReviewKey, review); err != nil {
			log.Warn("last review queue sync failed", "err", err)
		}
		return nil
	}}
}
