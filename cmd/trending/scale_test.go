package main

import (
	"errors"
	"strings"
	"testing"

	"github.com/spf13/pflag"

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
		{[]string{"merge", "--level", "bogus"}, `--level "bogus": one, shard or top`},
		{[]string{"merge", "--level", "shard"}, "--level shard needs --shard"},
		{[]string{"merge", "--level", "group"}, "--level shard needs --shard"}, // the deprecated name
		{[]string{"merge", "--shard", "1"}, "--shard is for --level shard"},
		{[]string{"merge", "--group-index", "1"}, "--shard is for --level shard"}, // the deprecated name
		{[]string{"merge", "--partials-partitions", "0"}, "--partials-partitions 0"},
		{[]string{"merge", "--kafka", k.Addr, "--level", "shard", "--shard", "3"}, "--shard 3: trending.partials has 1 partitions (0..0)"},
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

// TestOldFlagNamesStillWork: --group (now --consumer-group) and merge's --group-index (now
// --shard) keep working for existing deployments, each saying what to use instead; neither is
// offered in --help any more.
func TestOldFlagNamesStillWork(t *testing.T) {
	for _, c := range []struct{ old, now, value string }{{"group", "consumer-group", "trending-speed-b"}} {
		var got string
		fs := pflag.NewFlagSet("speed", pflag.ContinueOnError)
		var out strings.Builder
		fs.SetOutput(&out)
		addConsumerGroupFlag(fs, &got, "speed")
		if err := fs.Parse([]string{"--" + c.old, c.value}); err != nil {
			t.Fatal(err)
		}
		if got != c.value {
			t.Errorf("--%s %s set %q", c.old, c.value, got)
		}
		if !strings.Contains(out.String(), "use --"+c.now) {
			t.Errorf("--%s: no deprecation notice naming --%s: %q", c.old, c.now, out.String())
		}
		if f := fs.Lookup(c.old); f == nil || !f.Hidden {
			t.Errorf("--%s is still shown in --help", c.old)
		}
	}
	help, err := runTrending(t, "merge", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(help, "group-index") || !strings.Contains(help, "--shard int") {
		t.Errorf("merge --help shows --group-index or lacks --shard:\n%s", help)
	}
}
