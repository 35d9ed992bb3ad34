// Command trending finds the top K items over live time windows: speed layer, archive, batch
// layer and serving API in one binary, one subcommand per part.
//
// main stays thin: it builds the command tree (root.go) and runs it under a context that is
// cancelled on SIGINT or SIGTERM, so every long-running part shuts down in order.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd, err := newRootCommand().ExecuteContextC(ctx)
	if err == nil {
		return
	}
	var ue usageError
	if errors.As(err, &ue) || strings.HasPrefix(err.Error(), "unknown command") {
		// Point at the help of the command that refused, not the top level's.
		path := "trending"
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(os.Stderr, "trending: %v\nRun '%s --help' for usage.\n", err, path)
		os.Exit(2)
	}
	fmt.Fprintf(os.Stderr, "trending: %v\n", err)
	os.Exit(1)
}
