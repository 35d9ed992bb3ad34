package archive

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/objstore"
	"trending/internal/setting"
	"trending/model/event"
)

// offlineStore is a store New accepts; nothing here contacts it.
func offlineStore(t *testing.T) *objstore.Client {
	t.Helper()
	c := objstore.DefaultConfig()
	c.Endpoint, c.Bucket = "http://127.0.0.1:1", "b"
	st, err := objstore.New(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestConfigZeroMeansZero: New takes a Config as it is. DefaultConfig (with brokers) is
// accepted; every setting whose zero cannot work is refused by its field instead of
// replaced by the default; MaxFuture 0 is honoured: an event dated a minute ahead of the
// clock is quarantined, where the default (10m) archives it.
func TestConfigZeroMeansZero(t *testing.T) {
	st := offlineStore(t)
	base := DefaultConfig()
	base.Kafka = eventlog.Plain("127.0.0.1:1")
	if _, err := New(base, st, nil, nil); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	for field, mod := range map[string]func(*Config){
		"Topic":          func(c *Config) { c.Topic = "" },
		"ConsumerGroup":  func(c *Config) { c.ConsumerGroup = "" },
		"Root":           func(c *Config) { c.Root = "" },
		"RollBytes":      func(c *Config) { c.RollBytes = 0 },
		"RollAge":        func(c *Config) { c.RollAge = 0 },
		"MaxBufferBytes": func(c *Config) { c.MaxBufferBytes = 0 },
		"RowGroupRows":   func(c *Config) { c.RowGroupRows = 0 },
		"RetryMin":       func(c *Config) { c.RetryMin = 0 },
		"RetryMax":       func(c *Config) { c.RetryMax = 0 },
		"StopTimeout":    func(c *Config) { c.StopTimeout = 0 },
		"MaxWait":        func(c *Config) { c.MaxWait = 0 },
	} {
		c := base
		mod(&c)
		_, err := New(c, st, nil, nil)
		if !errors.Is(err, setting.ErrConfig) || !strings.Contains(err.Error(), field+":") {
			t.Errorf("%s zero: New error %v, want a setting error naming %s", field, err, field)
		}
	}

	ahead := func(maxFuture time.Duration) (rows, quarantined int) {
		t.Helper()
		c := base
		c.MaxFuture = maxFuture
		a, err := New(c, st, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		value := fmt.Sprintf(`{"item_id":"V1","count":1,"ts":%q}`, now.Add(time.Minute).UTC().Format(time.RFC3339Nano))
		a.add(kafka.Message{Partition: 0, Offset: 7, Time: now, Value: []byte(value)})
		pb := a.parts[0]
		for _, b := range pb.bad {
			if b.Reason != string(event.ReasonFutureTS) {
				t.Fatalf("quarantined as %s, want %s", b.Reason, event.ReasonFutureTS)
			}
		}
		return len(pb.rows), len(pb.bad)
	}
	if rows, bad := ahead(DefaultConfig().MaxFuture); rows != 1 || bad != 0 {
		t.Fatalf("default MaxFuture: a minute ahead gave %d rows, %d quarantined; want archived", rows, bad)
	}
	if rows, bad := ahead(0); rows != 0 || bad != 1 {
		t.Fatalf("MaxFuture 0: a minute ahead gave %d rows, %d quarantined; want quarantined", rows, bad)
	}
	if rows, bad := ahead(-1); rows != 1 || bad != 0 {
		t.Fatalf("MaxFuture negative: a minute ahead gave %d rows, %d quarantined; want archived (no check)", rows, bad)
	}
}

// TestEncodeOptionsZeroRefused: encodeFile takes its options as they are: the defaults
// work, a zero row-group size is an error naming the field, not the default.
func TestEncodeOptionsZeroRefused(t *testing.T) {
	if _, err := encodeFile(sampleRows(3, 0), 0, 0, 2, DefaultEncodeOptions()); err != nil {
		t.Fatalf("DefaultEncodeOptions: %v", err)
	}
	_, err := encodeFile(sampleRows(3, 0), 0, 0, 2, EncodeOptions{})
	if !errors.Is(err, setting.ErrConfig) || !strings.Contains(err.Error(), "RowGroupRows:") {
		t.Fatalf("RowGroupRows 0: %v, want a setting error naming RowGroupRows", err)
	}
}

// TestRefreshEveryDerived: RefreshEvery 0 is the documented derived interval (RollAge within
// 1 s..30 s); a set one is kept.
func TestRefreshEveryDerived(t *testing.T) {
	c := DefaultConfig()
	for _, tc := range []struct{ rollAge, set, want time.Duration }{
		{5 * time.Minute, 0, 30 * time.Second},
		{10 * time.Second, 0, 10 * time.Second},
		{200 * time.Millisecond, 0, time.Second},
		{10 * time.Second, time.Hour, time.Hour},
	} {
		c.RollAge, c.RefreshEvery = tc.rollAge, tc.set
		if got := c.refreshEvery(); got != tc.want {
			t.Errorf("RollAge %s, RefreshEvery %s: every %s, want %s", tc.rollAge, tc.set, got, tc.want)
		}
	}
}
