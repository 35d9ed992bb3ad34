package main

import (
	"errors"
	"strings"
	"testing"

	"trending/internal/eventlog"
)

// TestScaleFlagsReportByFlag: the two-level merge's and salting's settings that cannot work
// are usage errors naming the flag, before anything is produced or merged.
func TestScaleFlagsReportByFlag(t *testing.T) {
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"merge", "--level", "bogus"}, `--level "bogus": one, group or top`},
		{[]string{"merge", "--level", "group"}, "--level group needs --group-index"},
		{[]string{"merge", "--group-index", "1"}, "--group-index is for --level group"},
		{[]string{"merge", "--partials-partitions", "0"}, "--partials-partitions 0"},
		{[]string{"merge", "--kafka", k.Addr, "--level", "group", "--group-index", "3"}, "--group-index 3: trending.partials has 1 partitions (0..0)"},
		{[]string{"loadgen", "--kafka", k.Addr, "--salt-items", "a=x"}, "--salt-items"},
		{[]string{"loadgen", "--kafka", k.Addr, "--salt-items", "a=1"}, "--salt-items"},
		{[]string{"loadgen", "--kafka", k.Addr, "--salt-threshold", "5", "--salt-ways", "1"}, "--salt-ways: 1: must be 2 to 256"},
		{[]string{"loadgen", "--kafka", k.Addr, "--salt-threshold", "-1"}, "--salt-threshold"},
		{[]string{"loadgen", "--kafka", k.Addr, "--salt-threshold", "5", "--salt-hold", "0s"}, "--salt-hold: 0s: must be positive"},
		{[]string{"serve", "--salt-items", "a"}, "give --kafka"},
	} {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, err := runTrending(t, c.args...)
			var ue usageError
			if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want a usage error containing %q", err, c.want)
			}
		})
	}
}
