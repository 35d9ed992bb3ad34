package hotset_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/hotset"
	"trending/internal/itest"
	"trending/internal/setting"
	"trending/model/salt"
)

func TestNewRefuses(t *testing.T) {
	_, err := hotset.New(hotset.Config{})
	if !errors.Is(err, setting.ErrConfig) || len(setting.Errors(err)) != 3 {
		t.Fatalf("New(zero) = %v, want Kafka, Topic and Set named", err)
	}
}

// TestKey: a salted item's messages get their sub-keys and the header; others are untouched.
func TestKey(t *testing.T) {
	s, err := salt.NewSalter(salt.DefaultConfig(), salt.NewSet(salt.Entry{Item: "hot", Ways: 2}), nil)
	if err != nil {
		t.Fatal(err)
	}
	msgs := []kafka.Message{{Key: []byte("hot")}, {Key: []byte("cold")}, {Key: []byte("hot")}}
	hotset.Key(s, msgs, time.Now())
	keys := map[string]bool{}
	for i, m := range []kafka.Message{msgs[0], msgs[2]} {
		if len(m.Headers) != 1 || m.Headers[0].Key != salt.Header {
			t.Fatalf("salted message %d: headers %v", i, m.Headers)
		}
		keys[string(m.Key)] = true
	}
	if !keys["hot"] || !keys["hot#1"] || string(msgs[1].Key) != "cold" || msgs[1].Headers != nil {
		t.Fatalf("keys %v, cold message %+v", keys, msgs[1])
	}
	hotset.Key(nil, msgs, time.Now()) // no salter: nothing to do
}

func TestSharedEmbedded(t *testing.T) {
	k, err := eventlog.StartEmbedded("", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	shared(t, eventlog.Plain(k.Addr), "views.salted")
}

func TestSharedKafka(t *testing.T) {
	shared(t, eventlog.Plain(itest.Kafka(t)), itest.Name(t, "salted"))
}

// shared: an entry one producer publishes reaches another that follows the topic, and a
// producer started later reads it before it is Ready; the topic is compacted.
func shared(t *testing.T, kc *eventlog.Client, topic string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	start := func(set *salt.Set) (*hotset.Shared, func()) {
		s, err := hotset.New(hotset.Config{Kafka: kc, Topic: topic, Set: set})
		if err != nil {
			t.Fatal(err)
		}
		rctx, stop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- s.Run(rctx) }()
		return s, func() {
			stop()
			if err := <-done; err != nil {
				t.Error(err)
			}
		}
	}
	setA, setB := salt.NewSet(), salt.NewSet()
	a, stopA := start(setA)
	defer stopA()
	_, stopB := start(setB)
	defer stopB()
	<-a.Ready()
	until := time.Now().Add(time.Hour).UTC().Truncate(time.Millisecond)
	a.Publish(salt.Entry{Item: "premiere", Ways: 8, Until: until, By: "a"})
	for setB.Ways("premiere", time.Now()) != 8 {
		if ctx.Err() != nil {
			t.Fatal("the entry never reached the other producer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	setC := salt.NewSet()
	c, stopC := start(setC)
	defer stopC()
	select {
	case <-c.Ready():
	case <-ctx.Done():
		t.Fatal("a late producer never read the topic to its end")
	}
	if got := setC.Entries(time.Now()); len(got) != 1 || got[0] != (salt.Entry{Item: "premiere", Ways: 8, Until: until, By: "a"}) {
		t.Fatalf("a late producer's set when ready: %v", got)
	}
	tr := kc.Transport()
	defer tr.CloseIdleConnections()
	res, err := (&kafka.Client{Addr: kafka.TCP(kc.Brokers()...), Transport: tr}).DescribeConfigs(ctx, &kafka.DescribeConfigsRequest{
		Resources: []kafka.DescribeConfigRequestResource{{ResourceType: kafka.ResourceTypeTopic, ResourceName: topic, ConfigNames: []string{"cleanup.policy"}}}})
	if err != nil {
		t.Fatal(err)
	}
	policy := ""
	for _, r := range res.Resources {
		for _, e := range r.ConfigEntries {
			if e.ConfigName == "cleanup.policy" {
				policy = e.ConfigValue
			}
		}
	}
	if policy != "compact" {
		t.Fatalf("%s: cleanup.policy %q, want compact", topic, policy)
	}
}
