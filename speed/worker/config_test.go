package worker

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"trending/internal/eventlog"
	"trending/internal/objstore"
	"trending/internal/setting"
	"trending/model"
	"trending/model/windowset"
	"trending/speed/topics"
)

// validConfig is DefaultConfig with the collaborators New requires; nothing connects.
func validConfig(t *testing.T) Config {
	t.Helper()
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = "http://127.0.0.1:1", "b", "a", "s"
	obj, err := objstore.New(context.Background(), oc)
	if err != nil {
		t.Fatal(err)
	}
	c := DefaultConfig()
	c.Kafka, c.Objects = eventlog.Plain("127.0.0.1:1"), obj
	return c
}

// TestZeroMeansZero: DefaultConfig is where the defaults live and New takes it; an empty
// name or a zero count or interval that cannot work is refused by its field's name (nested
// ones as Window.X and TrendingTopics.X) instead of taking the default; a zero MaxFuture,
// BaseRefresh and IdleAdvance are settings (off, every tick, never) and New keeps them.
func TestZeroMeansZero(t *testing.T) {
	if _, err := New(validConfig(t)); err != nil {
		t.Fatalf("New(DefaultConfig() + Kafka, Objects) = %v", err)
	}
	for _, tc := range []struct {
		field string
		zero  func(*Config)
	}{
		{"Topic", func(c *Config) { c.Topic = "" }},
		{"DLQTopic", func(c *Config) { c.DLQTopic = "" }},
		{"PartialsTopic", func(c *Config) { c.PartialsTopic = "" }},
		{"ConsumerGroup", func(c *Config) { c.ConsumerGroup = "" }},
		{"CheckpointPrefix", func(c *Config) { c.CheckpointPrefix = "" }},
		{"Partitions", func(c *Config) { c.Partitions = 0 }},
		{"PartialsPartitions", func(c *Config) { c.PartialsPartitions = 0 }},
		{"PublishEvery", func(c *Config) { c.PublishEvery = 0 }},
		{"CheckpointEvery", func(c *Config) { c.CheckpointEvery = 0 }},
		{"KeepCheckpoints", func(c *Config) { c.KeepCheckpoints = 0 }},
		{"MaxFuture", func(c *Config) { c.MaxFuture = -time.Second }},
		{"BaseRefresh", func(c *Config) { c.BaseRefresh = -time.Second }},
		{"Window.K", func(c *Config) { c.Window.K = 0 }},
		{"Window.Sketch.Width", func(c *Config) { c.Window.Sketch.Width = 0 }},
		{"TrendingTopics.Width", func(c *Config) {
			tc := topics.DefaultConfig()
			tc.Width = 0
			c.TrendingTopics = &tc
		}},
		{"Groups", func(c *Config) { c.Groups = windowset.Groups{By: windowset.ByRegion, Every: true, Max: 0} }},
		{"GroupSketchWidth", func(c *Config) { c.GroupSketchWidth = -1 }},
		{"GroupSketchWidth", func(c *Config) {
			c.Groups, c.GroupSketchWidth = windowset.Groups{By: windowset.ByRegion, Values: []string{"eu"}}, 1000 // not a power of two
		}},
	} {
		t.Run(tc.field, func(t *testing.T) {
			c := validConfig(t)
			tc.zero(&c)
			_, err := New(c)
			var fields []string
			for _, e := range setting.Errors(err) {
				fields = append(fields, e.Field)
			}
			if !errors.Is(err, setting.ErrConfig) || !slices.Equal(fields, []string{tc.field}) {
				t.Fatalf("New = %v (fields %v), want one setting error naming %s", err, fields, tc.field)
			}
		})
	}
	if n := len(setting.Errors(Config{}.Validate())); n < 10 {
		t.Errorf("zero Config: %d setting errors, want every required one: %v", n, Config{}.Validate())
	}

	c := validConfig(t)
	c.MaxFuture, c.BaseRefresh, c.IdleAdvance, c.Log = 0, 0, 0, nil
	w, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	if w.cfg.MaxFuture != 0 || w.cfg.BaseRefresh != 0 || w.cfg.IdleAdvance != 0 {
		t.Errorf("New replaced zero settings: MaxFuture %s, BaseRefresh %s, IdleAdvance %s", w.cfg.MaxFuture, w.cfg.BaseRefresh, w.cfg.IdleAdvance)
	}
	if w.cfg.Log == nil {
		t.Error("a nil Log must become a discarding logger")
	}
}

// TestGroupWindow: every group state counts the partition's windows, with the group sketch
// width (0: the partition's) and no counts since the all-time boundary.
func TestGroupWindow(t *testing.T) {
	c := DefaultConfig()
	c.Window.SinceDays = 7
	g := c.groupWindow()
	if g.Sketch.Width != c.Window.Sketch.Width || g.SinceDays != 0 || len(g.Windows) != len(c.Window.Windows) {
		t.Fatalf("GroupSketchWidth 0: %+v", g)
	}
	c.GroupSketchWidth = 1 << 12
	if g := c.groupWindow(); g.Sketch.Width != 1<<12 || c.Window.Sketch.Width == 1<<12 {
		t.Fatalf("GroupSketchWidth 4096: group %d, partition %d", g.Sketch.Width, c.Window.Sketch.Width)
	}
}

// TestNoBaseNoSinceCounts: without a Base there is no boundary to count since, so New keeps
// no counts since one whatever Window.SinceDays says (a command passes --since-days as given;
// it once zeroed it itself without a store); with a Base it keeps them.
func TestNoBaseNoSinceCounts(t *testing.T) {
	for _, tc := range []struct {
		name string
		base bool
		want int
	}{{"no base", false, 0}, {"a base", true, 5}} {
		t.Run(tc.name, func(t *testing.T) {
			c := validConfig(t)
			c.Window.SinceDays = 5
			if tc.base {
				c.Base = func(context.Context) (model.List, error) { return model.List{}, nil }
			}
			w, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			if got := w.cfg.Window.SinceDays; got != tc.want {
				t.Errorf("the worker's Window.SinceDays %d, want %d", got, tc.want)
			}
		})
	}
}
