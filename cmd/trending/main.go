// Command trending finds the top K items over live time windows: speed layer, archive, batch
// layer and serving API in one binary, one subcommand per part.
//
// main stays thin: it builds the command tree (root.go) and runs it under a context that is
// cancelled on SIGINT or SIGTERM, so every long-running part shuts down in order.
//
// In detail (DESIGN.md's file map has the line): the binary: `main.go` (signals, exit
// codes), `root.go` (global flags, logging, metrics registry), `config.go` (flags >
// `TRENDING_*` env > YAML file), `flags.go` (the flag groups, each flag registered by one
// function: Kafka with its TLS/SASL and `--views-topic`, `--group`, `--partitions`,
// `--store`, `--clickhouse`, ...; `flags_test.go` walks the source to keep it so),
// `process.go` (`runProcess`: roles started together, stopped stage by stage),
// `metrics.go` (the `/metrics` role of commands without an API, the review-sync role),
// `security.go` (ClickHouse credentials flags), `storeopen.go`, one file per subcommand:
// `version`, `plan`, `speed` (also the window, S3 and max-future flag groups), `merge`,
// `archive`, `serve` (also the serving roles and token flags `up` shares, and the API's
// flags, `addAPIFlags`, with the one constructor of the API's configuration both use,
// `apiFlags.config`: the limits follow `--k` through `api.DefaultConfigForK`;
// `TestOneAPIConfig`, `TestUpAndServeFollowK`), `up`, `migrate`, `batch`, `loadgen`,
// `accuracy`, `topics`; `saltflags.go`: the producers' salting flags (`--salt-items`,
// `--salt-threshold`, `--salt-ways`, `--salt-hold`: loadgen, serve, up) and the shared hot
// set's role; `shutdown_test.go` runs `up` and `serve` as child processes and checks that
// events answered 202 before SIGTERM are in Kafka; `progress.go`: the terminal progress
// bar of long one-shot commands and `up`'s replay, and `logWriter`, which prints log lines
// above it; `config.go` also refuses a `TRENDING_*` variable that names no flag (nearest
// suggested), negative durations and wrongly typed values in words; `help.go` (every
// command's help in flag groups, wrapped to the terminal); `security.go`/`serve.go`
// `tokenFlags.check` (write routes need a token on any address other machines reach,
// `--open-writes` the opt-out); `lockdata.go` (the flock on `--data`, taken first);
// `batchrange.go` (`--windows`, `--from`, `--to`: one range vocabulary), `batchjson.go`
// (the one JSON schema of every batch subcommand, docs/batch.md (docs/batch.md)),
// `batchapi.go` (`batch ... --api URL`: the batch of a running `up` through
// `/v1/batch/status` and `/v1/batch/run`)
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
