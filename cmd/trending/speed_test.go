package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"trending/model/windowset"
	"trending/speed/window"
	"trending/speed/worker"
)

// TestWindowFlags: the window flags give the window.Config they say, including --lateness 0
// and a negative --lateness (both none: window.Config's 0) and --all-mode.
func TestWindowFlags(t *testing.T) {
	for _, tc := range []struct {
		name     string
		args     []string
		lateness time.Duration // resolved, as the partition uses it
		allMode  windowset.Mode
	}{
		{"defaults", nil, 30 * time.Second, windowset.Sketch},
		{"no lateness", []string{"--lateness", "0"}, 0, windowset.Sketch},
		{"negative lateness", []string{"--lateness", "-5s"}, 0, windowset.Sketch},
		{"two minutes", []string{"--lateness", "2m"}, 2 * time.Minute, windowset.Sketch},
		{"exact all time", []string{"--all-mode", "exact"}, 30 * time.Second, windowset.Exact},
		{"auto all time", []string{"--all-mode", "auto"}, 30 * time.Second, windowset.Sketch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("speed", pflag.ContinueOnError)
			wf := addWindowFlags(fs, 1<<18, 1<<16, "")
			if err := fs.Parse(tc.args); err != nil {
				t.Fatal(err)
			}
			c, err := wf.config()
			if err != nil {
				t.Fatal(err)
			}
			p, err := window.New(c)
			if err != nil {
				t.Fatal(err)
			}
			got := p.Config()
			if got.AllowedLateness != tc.lateness {
				t.Errorf("lateness %s, want %s", got.AllowedLateness, tc.lateness)
			}
			var all *window.WindowConfig
			for i, w := range got.Windows {
				if w.Name == "all" {
					all = &got.Windows[i]
				}
			}
			if all == nil || all.Kind != windowset.AllTime || all.Mode != tc.allMode {
				t.Errorf("all-time window %+v, want kind %s mode %s", all, windowset.AllTime, tc.allMode)
			}
		})
	}
	fs := pflag.NewFlagSet("speed", pflag.ContinueOnError)
	wf := addWindowFlags(fs, 1<<18, 1<<16, "")
	if err := fs.Parse([]string{"--all-mode", "fast"}); err != nil {
		t.Fatal(err)
	}
	if _, err := wf.config(); !errors.As(err, new(usageError)) {
		t.Fatalf("--all-mode fast: %v, want a usage error", err)
	}
}

func TestMaxFutureFlag(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		want  time.Duration
		usage bool
	}{
		{nil, worker.DefaultMaxFuture, false},
		{[]string{"--max-future", "1h"}, time.Hour, false},
		{[]string{"--max-future", "-1s"}, 0, false}, // no limit: the worker's 0
		{[]string{"--max-future", "0"}, 0, true},
	} {
		fs := pflag.NewFlagSet("speed", pflag.ContinueOnError)
		var d time.Duration
		addMaxFutureFlag(fs, &d)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		got, err := maxFuture(d)
		if tc.usage {
			if !errors.As(err, new(usageError)) {
				t.Errorf("%v: %v, want a usage error", tc.args, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%v: %s, %v; want %s", tc.args, got, err, tc.want)
		}
	}
}

// TestSpeedZeroSettingsNameTheirFlags: a zero the worker cannot use is a usage error naming
// the flag, not a silent default (--keep-checkpoints 0 used to keep 5, --sketch-width 0 to
// use 2^18, --k 0 to serve 100).
func TestSpeedZeroSettingsNameTheirFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--keep-checkpoints", "0"}, "--keep-checkpoints: 0: must be positive"},
		{[]string{"--sketch-width", "0"}, "--sketch-width: must be positive"},
		{[]string{"--k", "0"}, "--k: 0 is out of range"},
		{[]string{"--topics", "eu", "--topics-sketch-width", "0"}, "--topics-sketch-width: must be positive"},
	} {
		args := append([]string{"speed", "--kafka", "127.0.0.1:1", "--s3-endpoint", "http://127.0.0.1:1"}, tc.args...)
		_, err := runTrending(t, args...)
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("speed %s: %v, want a usage error containing %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
