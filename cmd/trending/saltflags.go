package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"

	"trending/internal/eventlog"
	"trending/internal/hotset"
	"trending/model/salt"
)

// saltFlags are hot-key salting's settings (docs/scale-out.md, "Hot keys") for the
// producers: loadgen, serve's ingest and up. The speed workers and the mergers need none: a
// salted message says so itself.
type saltFlags struct {
	items     string
	threshold int
	ways      int
	hold      time.Duration
}

// saltFieldFlags names the flags of the salt.Config fields (and ParseItems' Items).
var saltFieldFlags = map[string]string{"Items": "--salt-items", "Threshold": "--salt-threshold", "Ways": "--salt-ways", "Hold": "--salt-hold"}

// addSaltFlags adds --salt-items, --salt-threshold, --salt-ways and --salt-hold.
func addSaltFlags(fs *pflag.FlagSet) *saltFlags {
	f := &saltFlags{}
	d := salt.DefaultConfig()
	fs.StringVar(&f.items, "salt-items", "", "hot items to salt for good, item[=ways],...: each one's events are spread over its ways sub-keys (item, item#1, ...; default ways 4) so they land on several partitions, and the merger sums its counts; shared with every producer through the topic TOPIC.salted (default none)")
	fs.IntVar(&f.threshold, "salt-threshold", 0, "salt an item once this producer sends this many of its messages (after pre-summing) within one second; the item is shared with every producer through TOPIC.salted and stays salted --salt-hold after it last passed (0: detect none)")
	fs.IntVar(&f.ways, "salt-ways", d.Ways, "sub-keys a detected item is spread over (2-256; more than the views topic's partitions buys nothing)")
	fs.DurationVar(&f.hold, "salt-hold", d.Hold, "how long a detected item stays salted after it last passed --salt-threshold")
	return f
}

// on reports whether salting is asked for.
func (f *saltFlags) on() bool { return f.items != "" || f.threshold != 0 }

// build returns the Salter of a producer named by (loadgen, ingest) and the role that keeps
// its hot set in step with the shared topic; nil and a role without run when salting is off.
func (f *saltFlags) build(kc *eventlog.Client, names eventlog.Names, log *slog.Logger, reg prometheus.Registerer, by string) (*salt.Salter, role, error) {
	if !f.on() {
		return nil, role{}, nil
	}
	items, err := salt.ParseItems(f.items)
	if err != nil {
		return nil, role{}, usageOf(err, saltFieldFlags)
	}
	cfg := salt.DefaultConfig()
	cfg.Threshold, cfg.Ways, cfg.Hold, cfg.By = f.threshold, f.ways, f.hold, by
	set := salt.NewSet(items...)
	sh, err := hotset.New(hotset.Config{Kafka: kc, Topic: names.Salted, Set: set, Log: log.With("part", "salting"), Registry: reg})
	if err != nil {
		return nil, role{}, err
	}
	s, err := salt.NewSalter(cfg, set, sh.Publish)
	if err != nil {
		return nil, role{}, usageOf(err, saltFieldFlags)
	}
	log.Info("salting hot items", "configured", len(items), "threshold_msgs_per_s", f.threshold, "ways", f.ways, "shared_topic", names.Salted)
	return s, role{"salting", func(ctx context.Context) error { return sh.Run(ctx) }}, nil
}
