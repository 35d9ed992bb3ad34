package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is set at build time: go build -ldflags "-X main.version=v1.2.3".
var version = "dev"

func init() {
	subcommands = append(subcommands, func() *cobra.Command {
		return &cobra.Command{
			Use:   "version",
			Short: "Print the version, commit and Go version of this binary",
			Args:  cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error {
				commit, modified := "unknown", ""
				if bi, ok := debug.ReadBuildInfo(); ok {
					for _, s := range bi.Settings {
						switch s.Key {
						case "vcs.revision":
							commit = s.Value
						case "vcs.modified":
							if s.Value == "true" {
								modified = " (modified)"
							}
						}
					}
				}
				fmt.Fprintf(cmd.OutOrStdout(), "trending %s\ncommit %s%s\n%s %s/%s\n", version, commit, modified, runtime.Version(), runtime.GOOS, runtime.GOARCH)
				return nil
			},
		}
	})
}
