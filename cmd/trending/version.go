package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version and commit are set at build time: go build -ldflags "-X main.version=v1.2.3
// -X main.commit=$(git rev-parse HEAD)" (the Makefile and the Dockerfile do). Without them the
// commit comes from the Go build info, which holds it only when the build stamped it (not with
// GOFLAGS=-buildvcs=false, nor from a tree outside git).
var (
	version = "dev"
	commit  = ""
)

// buildCommit is the commit this binary was built from, " (modified)" after it when the work
// tree had uncommitted changes, or "unknown".
func buildCommit() string {
	c, modified := commit, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				if c == "" {
					c = s.Value
				}
			case "vcs.modified":
				if s.Value == "true" {
					modified = " (modified)"
				}
			}
		}
	}
	if c == "" {
		return "unknown"
	}
	return c + modified
}

func init() {
	subcommands = append(subcommands, func() *cobra.Command {
		return &cobra.Command{
			Use:   "version",
			Short: "Print the version, commit and Go version of this binary",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				fmt.Fprintf(cmd.OutOrStdout(), "trending %s\ncommit %s\n%s %s/%s\n", version, buildCommit(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
				return nil
			},
		}
	})
}
