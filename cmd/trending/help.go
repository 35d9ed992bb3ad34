package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// flagGroups names the group of a flag's help by the start of its name, first match wins; a
// flag that matches none is one of the command's own settings. One table for every command,
// so a flag reads under the same heading wherever it appears.
var flagGroups = []struct {
	title    string
	prefixes []string
}{
	{"Kafka", []string{"kafka", "views-topic", "consumer-group", "partials-", "partitions"}},
	{"Object store (S3)", []string{"s3-"}},
	{"ClickHouse and the serving store", []string{"clickhouse", "store", "cluster"}},
	{"Windows and counting", []string{"window", "hour-mode", "day-mode", "month-mode", "all-mode", "sketch-", "counter-bytes",
		"group-by", "groups", "group-sketch-width", "frequent-", "k", "m", "lateness", "max-future", "since-days", "base-", "publish-every",
		"checkpoint-every", "keep-checkpoints", "cap-"}},
	{"Trending topics", []string{"topics", "blocklist", "queue"}},
	{"Hot keys (salting)", []string{"salt-"}},
	{"API", []string{"listen", "token", "ingest-token", "open-writes", "max-limit", "default-limit", "max-age", "cors-origins",
		"read-", "write-timeout", "idle-timeout", "shutdown-timeout", "max-header-bytes", "fast-path", "max-streams", "stream-", "refresh",
		"full-refresh", "version-poll", "hot-span", "retain-", "serve-stale-for", "titles"}},
}

// groupOf returns the heading of flag name ("" for the command's own settings).
func groupOf(name string) string {
	for _, g := range flagGroups {
		for _, p := range g.prefixes {
			if name == p || strings.HasSuffix(p, "-") && strings.HasPrefix(name, p) || len(p) > 2 && !strings.HasSuffix(p, "-") && strings.HasPrefix(name, p+"-") {
				return g.title
			}
		}
	}
	return ""
}

// helpWidth is the terminal's width when out is one, else 80.
func helpWidth(out io.Writer) int {
	if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		if w, _, err := term.GetSize(int(f.Fd())); err == nil && w >= 40 {
			return w
		}
	}
	return 80
}

// usage writes a command's usage: its synopsis, examples and subcommands as cobra does, then
// its flags in groups (the command's own settings first), each flag's help wrapped to the
// terminal's width (80 off a terminal), then the flags every command shares.
func usage(c *cobra.Command) error {
	out := c.OutOrStderr()
	width := helpWidth(out)
	var b strings.Builder
	b.WriteString("Usage:\n")
	if c.Runnable() {
		fmt.Fprintf(&b, "  %s\n", c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "  %s [command]\n", c.CommandPath())
	}
	if len(c.Aliases) > 0 {
		fmt.Fprintf(&b, "\nAliases:\n  %s\n", c.NameAndAliases())
	}
	if c.HasExample() {
		fmt.Fprintf(&b, "\nExamples:\n%s\n", c.Example)
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\nCommands:\n")
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				fmt.Fprintf(&b, "  %-*s %s\n", c.NamePadding(), sub.Name(), sub.Short)
			}
		}
	}
	local := c.LocalFlags()
	groups := map[string]*pflag.FlagSet{}
	order := []string{""}
	for _, g := range flagGroups {
		order = append(order, g.title)
	}
	local.VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		g := groupOf(f.Name)
		if groups[g] == nil {
			groups[g] = pflag.NewFlagSet(g, pflag.ContinueOnError)
			groups[g].SortFlags = local.SortFlags
		}
		groups[g].AddFlag(f)
	})
	for _, g := range order {
		fs := groups[g]
		if fs == nil {
			continue
		}
		title := g
		if title == "" {
			title = "Flags"
			if len(groups) > 1 {
				title = "Settings of " + c.Name()
			}
		}
		fmt.Fprintf(&b, "\n%s:\n%s", title, fs.FlagUsagesWrapped(width))
	}
	if inherited := c.InheritedFlags(); inherited.HasAvailableFlags() {
		fmt.Fprintf(&b, "\nGlobal Flags:\n%s", inherited.FlagUsagesWrapped(width))
	}
	if c.HasAvailableSubCommands() {
		fmt.Fprintf(&b, "\nUse \"%s [command] --help\" for more information about a command.\n", c.CommandPath())
	}
	_, err := io.WriteString(out, b.String())
	return err
}
