package archive

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/model/event"
)

// TestConsumerLag: trending_archive_consumer_lag follows the fetches' high watermark, grows
// with Kafka's at a refresh while nothing is fetched, and after a rebalance reports a
// partition only from its next message.
func TestConsumerLag(t *testing.T) {
	st := embeddedStore(t)
	cfg := DefaultConfig()
	cfg.Kafka, cfg.RollAge = eventlog.Plain("unused:9092"), time.Minute
	reg := prometheus.NewRegistry()
	a, err := New(cfg, st, nil, reg)
	if err != nil {
		t.Fatal(err)
	}
	lags := func() map[string]float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			if mf.GetName() == "trending_archive_consumer_lag" {
				for _, m := range mf.GetMetric() {
					out[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
		return out
	}
	msg := func(p int, off, hw int64) kafka.Message {
		e := event.Event{ItemID: "a", Count: 1, TS: time.Now().UTC().Truncate(time.Millisecond)}
		return kafka.Message{Partition: p, Offset: off, HighWaterMark: hw, Time: time.Now(), Value: e.AppendJSON(nil)}
	}
	a.add(msg(0, 4, 10)) // next offset 5 of 10
	a.add(msg(1, 0, 1))  // caught up
	if got := lags(); len(got) != 2 || got["0"] != 5 || got["1"] != 0 {
		t.Fatalf("after fetches: %v, want 0: 5, 1: 0", got)
	}
	hw := map[int]int64{0: 30, 1: 8, 2: 9} // partition 2 is not this archiver's
	a.offsets = func(context.Context) ([]eventlog.Offsets, error) {
		var out []eventlog.Offsets
		for p := range 3 {
			out = append(out, eventlog.Offsets{Partition: p, Last: hw[p]})
		}
		return out, nil
	}
	if err := a.refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := lags(); len(got) != 2 || got["0"] != 25 || got["1"] != 7 {
		t.Fatalf("after a refresh with nothing fetched: %v, want 0: 25, 1: 7 (and no partition 2)", got)
	}
	a.forgetOwners()
	if got := lags(); len(got) != 0 {
		t.Fatalf("after a rebalance: %v, want none", got)
	}
	if err := a.refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	a.add(msg(1, 1, 8))
	if got := lags(); len(got) != 1 || got["1"] != 6 {
		t.Fatalf("after a rebalance and a message of partition 1: %v, want 1: 6 only", got)
	}
}
