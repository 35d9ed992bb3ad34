package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
)

// role is one long-running part of a process: Run returns only after its last flush.
type role struct {
	name string
	run  func(ctx context.Context) error
}

// stage is the roles that stop together; a process stops its stages one after another.
type stage []role

// runProcess runs every role of every stage concurrently and stops them in stage order: when
// ctx ends, or any role returns (an error, or nil before it was asked to stop), the first
// stage's context is cancelled, and each later stage's only after every Run of the stage
// before it has returned. So `up` and `serve` stop producers before the API drains, the API
// before the ingest flushes what it accepted, the ingest before the speed workers take their
// last checkpoint, and so on: no part loses what an earlier one handed it at shutdown.
//
// Every goroutine it starts is waited for before it returns: nothing is left unsupervised.
// The error is the join of the roles' errors (context.Canceled dropped), each named.
func runProcess(ctx context.Context, log *slog.Logger, stages ...stage) error {
	type result struct {
		stage int
		name  string
		err   error
	}
	results := make(chan result, 16)
	var (
		cancels = make([]context.CancelFunc, len(stages))
		dones   = make([]*sync.WaitGroup, len(stages))
		total   int
	)
	// The stages' contexts do not inherit ctx's cancellation: only the shutdown below ends
	// them, in order. Values (the app) still flow.
	base := context.WithoutCancel(ctx)
	for i, st := range stages {
		sctx, cancel := context.WithCancel(base)
		cancels[i], dones[i] = cancel, &sync.WaitGroup{}
		for _, r := range st {
			total++
			dones[i].Add(1)
			go func() {
				defer dones[i].Done()
				err := r.run(sctx)
				results <- result{i, r.name, err}
			}()
		}
	}
	var errs []error
	collect := func(r result) {
		if r.err != nil && !errors.Is(r.err, context.Canceled) {
			errs = append(errs, fmt.Errorf("%s: %w", r.name, r.err))
		}
	}
	received := 0
	select {
	case <-ctx.Done():
		log.Info("stopping in order", "stages", len(stages))
	case r := <-results:
		received++
		collect(r)
		if r.err == nil {
			log.Warn("a part stopped by itself; stopping the process", "part", r.name)
		} else {
			log.Error("a part failed; stopping the process", "part", r.name, "err", r.err)
		}
	}
	for i := range stages {
		cancels[i]()
		// Wait for this stage while collecting results from any stage (a later one may fail
		// on its own meanwhile; its result must not block its goroutine).
		waited := make(chan struct{})
		go func() { dones[i].Wait(); close(waited) }()
	wait:
		for {
			select {
			case r := <-results:
				received++
				collect(r)
			case <-waited:
				break wait
			}
		}
	}
	for received < total {
		collect(<-results)
		received++
	}
	return errors.Join(errs...)
}
