package batch

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"trending/archive"
	"trending/internal/setting"
	"trending/model/topicrules"
)

// stubArchive answers Incomplete with why (recording the lateness it was asked with) and
// has no late-data marks; nothing else is called by Closed and an idle scheduler.
type stubArchive struct {
	Archive
	why string

	mu       sync.Mutex
	lateness []time.Duration
}

func (a *stubArchive) Incomplete(_ context.Context, _ time.Time, lateness time.Duration) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.lateness = append(a.lateness, lateness)
	return a.why, nil
}

func (a *stubArchive) Dirty(context.Context) ([]archive.Dirty, error) { return nil, nil }

// wantSettingError fails unless err is a setting error naming field.
func wantSettingError(t *testing.T, what string, err error, field string) {
	t.Helper()
	if !errors.Is(err, setting.ErrConfig) || !strings.Contains(err.Error(), field+":") {
		t.Errorf("%s: %v, want a setting error naming %s", what, err, field)
	}
}

// TestConfigZeroMeansZero: NewRunner takes a Config as it is. DefaultConfig is accepted;
// a zero BaseFactor or a nil clock is refused by field instead of replaced; AllowedLateness
// 0 closes a window at its end.
func TestConfigZeroMeansZero(t *testing.T) {
	hour := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)
	now := hour.Add(time.Hour + time.Minute) // a minute after the hour's end
	runner := func(mod func(*Config)) (*Runner, *stubArchive, error) {
		arc := &stubArchive{}
		cfg := DefaultConfig()
		cfg.Now = func() time.Time { return now }
		mod(&cfg)
		r, err := NewRunner(cfg, nil, arc, nil, nil)
		return r, arc, err
	}
	r, _, err := runner(func(*Config) {})
	if err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	if err := r.Closed(context.Background(), Window{Hour, hour}); !errors.Is(err, ErrWindowOpen) {
		t.Fatalf("default lateness (10m), a minute after the end: %v, want ErrWindowOpen", err)
	}
	_, _, err = runner(func(c *Config) { c.BaseFactor = 0 })
	wantSettingError(t, "BaseFactor 0", err, "BaseFactor")
	_, _, err = runner(func(c *Config) { c.Now = nil })
	wantSettingError(t, "Now nil", err, "Now")

	r, arc, err := runner(func(c *Config) { c.AllowedLateness = 0 })
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Closed(context.Background(), Window{Hour, hour}); err != nil {
		t.Fatalf("lateness 0, a minute after the end: %v, want closed", err)
	}
	if len(arc.lateness) != 1 || arc.lateness[0] != 0 {
		t.Fatalf("the archive was asked with lateness %v, want [0]", arc.lateness)
	}
}

// TestScheduleConfigZeroMeansZero: Schedule takes its config as it is: DefaultScheduleConfig
// is accepted, a zero interval or lookback is refused by field before anything runs, and
// NightlyAt 0 runs the nightly batch from midnight on (the default waits until 00:30).
func TestScheduleConfigZeroMeansZero(t *testing.T) {
	if err := DefaultScheduleConfig().Validate(); err != nil {
		t.Fatalf("DefaultScheduleConfig: %v", err)
	}
	midnight := time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC)
	cfg := DefaultConfig()
	cfg.Now = func() time.Time { return midnight.Add(10 * time.Minute) }
	r, err := NewRunner(cfg, nil, &stubArchive{why: "not yet"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for field, mod := range map[string]func(*ScheduleConfig){
		"Every":     func(c *ScheduleConfig) { c.Every = 0 },
		"Lookback":  func(c *ScheduleConfig) { c.Lookback = 0 },
		"NightlyAt": func(c *ScheduleConfig) { c.NightlyAt = 24 * time.Hour },
	} {
		sc := DefaultScheduleConfig()
		mod(&sc)
		wantSettingError(t, field, r.Schedule(context.Background(), sc), field)
	}
	// Every archive hour is incomplete, so a nightly run that starts says it is waiting.
	nightlyTried := func(at time.Duration) bool {
		var log bytes.Buffer
		sc := DefaultScheduleConfig()
		sc.Every, sc.NightlyAt = 5*time.Millisecond, at
		sc.Log = slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		if err := r.Schedule(ctx, sc); err != nil {
			t.Fatal(err)
		}
		return strings.Contains(log.String(), "nightly batch waiting")
	}
	if nightlyTried(DefaultScheduleConfig().NightlyAt) {
		t.Fatal("default NightlyAt (30m): the nightly run started at 00:10")
	}
	if !nightlyTried(0) {
		t.Fatal("NightlyAt 0: the nightly run did not start at 00:10")
	}
}

// TestTopicsConfigZeroMeansZero: NewTopics and TopicsList take a TopicsConfig as it is.
// DefaultTopicsConfig is accepted; zero settings that cannot work are refused by field
// (nested ones as Surge.X, Weight.X); Surge.Floor 0 is no floor and Weight.NewAccountAge 0
// counts no account as new.
func TestTopicsConfigZeroMeansZero(t *testing.T) {
	if _, err := NewTopics(nil, nil, DefaultTopicsConfig()); err != nil {
		t.Fatalf("DefaultTopicsConfig: %v", err)
	}
	for field, mod := range map[string]func(*TopicsConfig){
		"ListSize":           func(c *TopicsConfig) { c.ListSize = 0 },
		"BaselineDays":       func(c *TopicsConfig) { c.BaselineDays = 0 },
		"DedupeSlot":         func(c *TopicsConfig) { c.DedupeSlot = 0 },
		"Surge.Smoothing":    func(c *TopicsConfig) { c.Surge.Smoothing = 0 },
		"Surge.Stay":         func(c *TopicsConfig) { c.Surge.Stay = 0 },
		"Surge.Enter":        func(c *TopicsConfig) { c.Surge.Enter = 0 },
		"Weight.ReviewShare": func(c *TopicsConfig) { c.Weight.ReviewShare = 0 },
		"Weight.ReviewCut":   func(c *TopicsConfig) { c.Weight.ReviewCut = 0 },
	} {
		c := DefaultTopicsConfig()
		mod(&c)
		_, err := NewTopics(nil, nil, c)
		wantSettingError(t, field+" 0", err, field)
	}

	cur := []TopicCount{{Topic: "tiny", Tenths: 10}} // one mention
	if items, _ := TopicsList(DefaultTopicsConfig(), topicrules.World, cur, nil); len(items) != 0 {
		t.Fatalf("default floor (300): one mention listed: %+v", items)
	}
	noFloor := DefaultTopicsConfig()
	noFloor.Surge.Floor = 0
	if items, _ := TopicsList(noFloor, topicrules.World, cur, nil); len(items) != 1 || items[0].ItemID != "tiny" {
		t.Fatalf("Floor 0: %+v, want the one-mention topic listed", items)
	}

	young := int32(2) // days
	isNew := func(c TopicsConfig) bool {
		tp, err := NewTopics(nil, nil, c)
		if err != nil {
			t.Fatal(err)
		}
		return tp.rules().isNew(&young)
	}
	if !isNew(DefaultTopicsConfig()) {
		t.Fatal("default new-account age (30 days): a 2-day-old account is not new")
	}
	none := DefaultTopicsConfig()
	none.Weight.NewAccountAge = 0
	if isNew(none) {
		t.Fatal("NewAccountAge 0: a 2-day-old account counts as new")
	}
}

// TestClickHouseConfigZeroRefused: the ClickHouse engine's defaults are accepted and a zero
// chunk size is refused by field.
func TestClickHouseConfigZeroRefused(t *testing.T) {
	c := DefaultClickHouseConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultClickHouseConfig: %v", err)
	}
	c.ChunkRows = 0
	wantSettingError(t, "ChunkRows 0", c.Validate(), "ChunkRows")

	// A cluster needs a name ClickHouse accepts and a way to reach its shards.
	c = DefaultClickHouseConfig()
	c.Cluster = "trending_2shards"
	wantSettingError(t, "Cluster without Dial", c.Validate(), "Dial")
	c.Dial = func(context.Context, string) (driver.Conn, error) { return nil, nil }
	if err := c.Validate(); err != nil {
		t.Fatalf("Cluster and Dial: %v", err)
	}
	c.Cluster = "bad-name"
	wantSettingError(t, "Cluster bad-name", c.Validate(), "Cluster")
}
