package titles

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"trending/internal/setting"
	"trending/model"
)

// Config configures an Attacher. Start from DefaultConfig: New refuses a nil Source by the
// field's name; a nil Log discards and a nil Registry keeps no metrics.
type Config struct {
	// Source looks the metadata up (Open builds one from the --titles flag). Default None:
	// lists carry item ids only.
	Source Source
	// Log receives a warning per failed lookup.
	Log *slog.Logger
	// Registry receives trending_title_failures_total.
	Registry prometheus.Registerer
}

// DefaultConfig returns the defaults: no titles.
func DefaultConfig() Config { return Config{Source: None{}} }

// Validate reports a setting that cannot work, by its field (setting.ErrConfig).
func (c Config) Validate() error {
	if c.Source == nil {
		return fmt.Errorf("titles: %w", setting.Invalid("Source", "no source: start from DefaultConfig (None, no titles)"))
	}
	return nil
}

// Attacher puts the display metadata of a list's items on the list, with the rules every
// writer shares: each lookup asks the Source for the list's items (an HTTP source asks its
// endpoint only for the ones it has not asked about lately, a file source reads its file
// only when it changed), and when a lookup fails the items keep the metadata the source last
// gave them. One Attacher serves every writer of a process (up's merger and batch share it),
// so they show the same metadata for the same item. Safe for concurrent use.
type Attacher struct {
	cfg      Config
	failures prometheus.Counter

	mu    sync.Mutex
	known map[string]Meta // the last metadata the source gave, of every item it was asked about
}

// New builds an Attacher, or returns the setting that cannot work (Validate).
func New(cfg Config) (*Attacher, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	a := &Attacher{cfg: cfg, known: map[string]Meta{},
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "trending_title_failures_total",
			Help: "Title lookups that failed, by any writer of served lists (the items kept their last known titles)."})}
	if cfg.Registry != nil {
		if err := cfg.Registry.Register(a.failures); err != nil {
			return nil, fmt.Errorf("titles metrics: %w", err)
		}
	}
	return a, nil
}

// Attach sets every item's Title and Thumbnail: what the source says of it now or, when the
// lookup fails, what the source last said (none if it never described the item). A
// successful lookup is the truth for the items it was asked about, so an item whose
// metadata was removed from the source loses it. Attach never fails: a list is written
// without fresh titles rather than not at all, and the failure is logged and counted.
func (a *Attacher) Attach(ctx context.Context, l *model.List) {
	if len(l.Items) == 0 {
		return
	}
	ids := make([]string, len(l.Items))
	for i, it := range l.Items {
		ids[i] = it.ItemID
	}
	got, err := a.cfg.Source.Titles(ctx, ids)
	if err != nil {
		a.failures.Inc()
		a.cfg.Log.Warn("title lookup failed; reusing the last known titles", "list", l.Key().String(), "err", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err == nil {
		for _, id := range ids {
			if m, ok := got[id]; ok && m != (Meta{}) {
				a.known[id] = m
			} else {
				delete(a.known, id)
			}
		}
	}
	for i := range l.Items {
		m := a.known[l.Items[i].ItemID]
		l.Items[i].Title, l.Items[i].Thumbnail = m.Title, m.Thumbnail
	}
}
