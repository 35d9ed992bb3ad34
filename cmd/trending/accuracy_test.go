package main

import (
	"errors"
	"strings"
	"testing"
)

func TestAccuracyFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--views", "0"}, "--views"},
		{[]string{"--span", "0s"}, "--span"},
		{[]string{"--partitions", "0"}, "--partitions"},
		{[]string{"--points", "0"}, "--points"},
		{[]string{"--sketch-width", "1000"}, "power of two"},
		{[]string{"--sketch-width", "-1"}, "--sketch-width"},
		{[]string{"--month-mode", "fuzzy"}, "--month-mode"},
		{[]string{"--k", "5000"}, "--k: 5000"},
		{[]string{"--zipf", "-1"}, "--zipf"},
		{[]string{"--target-ratio", "0"}, "--target-ratio"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, err := runTrending(t, append([]string{"accuracy"}, c.args...)...)
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want a usage error mentioning %q", err, c.want)
			}
		})
	}
}

func TestAccuracyCommand(t *testing.T) {
	args := []string{"accuracy", "--items", "20000", "--views", "200000", "--span", "6h", "--partitions", "2",
		"--points", "2", "--day-mode", "sketch", "--check"}
	out, err := runTrending(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// Off a terminal the progress is a line at each tenth of the span fed (6h: every hour that
	// passes a tenth).
	for _, want := range []string{"accuracy: 10% of the stream fed (1h of 6h event time)", "accuracy: 100% of the stream fed (6h of 6h event time)",
		"20,000 items, Zipf 1.1", "scaled from the month sketch", "RECALL", "calendar-hour", "final", "goals met"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	js, err := runTrending(t, append(args, "--json")...)
	if err != nil || !strings.Contains(js, `"goals_missed": null`) || !strings.Contains(js, `"recall": 1`) {
		t.Fatalf("--json: %v\n%s", err, js)
	}
	// An undersized sketch misses the goals, and --check turns that into an error.
	out, err = runTrending(t, append(args, "--sketch-width", "16")...)
	if err == nil || !strings.Contains(out, "goals missed") {
		t.Fatalf("a 16-wide sketch passed --check: %v\n%s", err, out)
	}
}

func TestAccuracyVsFrequent(t *testing.T) {
	args := []string{"accuracy", "--vs-frequent", "--items", "20000", "--views", "300000", "--span", "90m", "--partitions", "2",
		"--points", "1", "--sketch-width", "256", "--check"}
	out, err := runTrending(t, args...)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"frequent items vs count-min", "capacity 160", "frequent", "sketch", "A PRIORI", "goals met"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if _, err := runTrending(t, append(args, "--frequent-capacity", "-1")...); err == nil || !strings.Contains(err.Error(), "--frequent-capacity") {
		t.Fatalf("--frequent-capacity -1: %v", err)
	}
}
