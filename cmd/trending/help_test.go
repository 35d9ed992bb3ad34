package main

import (
	"strings"
	"testing"
)

// TestHelpWrappedAndGrouped: off a terminal, a command's help wraps every flag's text to 80
// columns (only a single unbreakable token, such as a window-set spec, may run past it) and
// shows the flags under group headings, the command's own settings first.
func TestHelpWrappedAndGrouped(t *testing.T) {
	for _, c := range []struct {
		args   []string
		groups []string
	}{
		{[]string{"up", "--help"}, []string{"Settings of up:", "Kafka:", "Object store (S3):", "Windows and counting:", "API:", "Global Flags:"}},
		{[]string{"speed", "--help"}, []string{"Kafka:", "Object store (S3):", "Windows and counting:"}},
		{[]string{"serve", "--help"}, []string{"Kafka:", "API:"}},
		{[]string{"batch", "run", "--help"}, []string{"ClickHouse and the serving store:"}},
	} {
		out, err := runTrending(t, c.args...)
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(out, "\nSettings of ")
		if i < 0 {
			i = strings.Index(out, "\nFlags:")
		}
		if i < 0 {
			t.Fatalf("%v: no flags section:\n%s", c.args, out)
		}
		for _, line := range strings.Split(out[i:], "\n") {
			if len(line) <= 80 {
				continue
			}
			longest := 0
			for _, w := range strings.Fields(line) {
				longest = max(longest, len(w))
			}
			if longest < 40 {
				t.Errorf("%v: a %d-column line that could wrap: %q", c.args, len(line), line)
			}
		}
		last := -1
		for _, g := range c.groups {
			j := strings.Index(out, "\n"+g+"\n")
			if j < 0 || j < last {
				t.Errorf("%v: heading %q missing or out of order", c.args, g)
			}
			last = j
		}
	}
}

// TestGroupOf: flags are grouped by name, the same heading in every command.
func TestGroupOf(t *testing.T) {
	for name, want := range map[string]string{
		"kafka": "Kafka", "kafka-sasl": "Kafka", "views-topic": "Kafka", "s3-endpoint": "Object store (S3)",
		"store": "ClickHouse and the serving store", "clickhouse-user": "ClickHouse and the serving store",
		"k": "Windows and counting", "m": "Windows and counting", "sketch-width": "Windows and counting",
		"window-set": "Windows and counting", "max-limit": "API", "token": "API", "topics-floor": "Trending topics",
		"salt-items": "Hot keys (salting)", "data": "", "keep": "", "merge": "", "rate": "",
	} {
		if got := groupOf(name); got != want {
			t.Errorf("groupOf(%q) = %q, want %q", name, got, want)
		}
	}
}
