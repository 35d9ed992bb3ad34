package main

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// recorder notes the order in which roles were asked to stop and returned.
type recorder struct {
	mu    sync.Mutex
	order []string
}

func (r *recorder) note(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.order = append(r.order, s)
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}

// waiter is a role that returns once its context ends, after a last flush of flush.
func (r *recorder) waiter(name string, flush time.Duration) role {
	return role{name, func(ctx context.Context) error {
		<-ctx.Done()
		r.note("stop " + name)
		time.Sleep(flush)
		r.note("done " + name)
		return nil
	}}
}

func TestRunProcessStopsStagesInOrder(t *testing.T) {
	var r recorder
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- runProcess(ctx, slog.New(slog.DiscardHandler),
			stage{r.waiter("load", 0)},
			stage{r.waiter("api", 20*time.Millisecond), r.waiter("api2", 5*time.Millisecond)},
			nil, // an empty stage (up without its load generator) is passed through
			stage{r.waiter("ingest", 10*time.Millisecond)},
			stage{r.waiter("speed", 0)})
	}()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	order := r.list()
	pos := func(s string) int { return slices.Index(order, s) }
	for _, c := range [][2]string{{"done load", "stop api"}, {"done api", "stop ingest"}, {"done api2", "stop ingest"}, {"done ingest", "stop speed"}} {
		if pos(c[0]) < 0 || pos(c[1]) < 0 || pos(c[0]) > pos(c[1]) {
			t.Fatalf("%q should come before %q: %v", c[0], c[1], order)
		}
	}
	if len(order) != 10 {
		t.Fatalf("every role should stop once: %v", order)
	}
}

// A failing role stops the process, still in order, and its error is returned, named; a
// later stage failing on its own while an earlier one stops does not block anything.
func TestRunProcessFailureStopsInOrder(t *testing.T) {
	var r recorder
	boom := errors.New("boom")
	err := runProcess(context.Background(), slog.New(slog.DiscardHandler),
		stage{r.waiter("load", 30*time.Millisecond)},
		stage{{"api", func(ctx context.Context) error { time.Sleep(10 * time.Millisecond); return boom }}},
		stage{{"speed", func(ctx context.Context) error { time.Sleep(15 * time.Millisecond); return errors.New("also failed") }}},
		stage{r.waiter("archive", 0)})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "api: boom") || !strings.Contains(err.Error(), "speed: also failed") {
		t.Fatalf("err = %v, want both failures named", err)
	}
	if got := r.list(); !slices.Equal(got, []string{"stop load", "done load", "stop archive", "done archive"}) {
		t.Fatalf("order %v", got)
	}
}

// A role that returns nil before it was asked to stop also stops the process: nothing runs
// on unsupervised.
func TestRunProcessEarlyReturnStops(t *testing.T) {
	var r recorder
	done := make(chan error, 1)
	go func() {
		done <- runProcess(context.Background(), slog.New(slog.DiscardHandler),
			stage{{"short", func(context.Context) error { return nil }}},
			stage{r.waiter("api", 0)})
	}()
	select {
	case err := <-done:
		if got := r.list(); err != nil || !slices.Equal(got, []string{"stop api", "done api"}) {
			t.Fatalf("err %v, order %v", err, got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("runProcess kept running after a role returned")
	}
}
