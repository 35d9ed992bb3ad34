package eventlog

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"
)

func TestRetryable(t *testing.T) {
	// A real refused dial: what every role gets while the broker is stopped.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, refused := Plain(addr).Dial(ctx)
	if refused == nil {
		t.Fatal("dialing a closed port succeeded")
	}
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil is no failure", nil, false},
		{"connection refused", refused, true},
		{"fetch wrapped around a refused dial", fmt.Errorf("archive: fetch from views: %w", refused), true},
		{"broker restarting: leader not available", kafka.LeaderNotAvailable, true},
		{"group coordinator moving", fmt.Errorf("join: %w", kafka.NotCoordinatorForGroup), true},
		{"rebalance", kafka.RebalanceInProgress, true},
		{"unknown topic (retryable until it persists)", kafka.UnknownTopicOrPartition, true},
		{"deadline", context.DeadlineExceeded, true},
		{"an error nobody classified", errors.New("something odd"), true},
		{"wrong password", fmt.Errorf("dial: %w", kafka.SASLAuthenticationFailed), false},
		{"topic ACL", kafka.TopicAuthorizationFailed, false},
		{"group ACL", kafka.GroupAuthorizationFailed, false},
		{"cluster ACL", kafka.ClusterAuthorizationFailed, false},
		{"SASL mechanism", kafka.UnsupportedSASLMechanism, false},
		{"untrusted certificate", fmt.Errorf("dial: %w", x509.UnknownAuthorityError{}), false},
		{"marked unrecoverable", fmt.Errorf("x: %w", ErrUnrecoverable), false},
		{"write errors, one an ACL refusal", kafka.WriteErrors{nil, kafka.TopicAuthorizationFailed}, false},
		{"write errors, all retryable", kafka.WriteErrors{kafka.NotLeaderForPartition, nil}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := Retryable(c.err); got != c.want {
				t.Errorf("Retryable(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
}

// gaugeValue reads trending_kafka_up{role} from reg.
func gaugeValue(t *testing.T, reg *prometheus.Registry, role string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "trending_kafka_up" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "role" && l.GetValue() == role {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no trending_kafka_up{role=%q}", role)
	return 0
}

func TestHealthLogsOncePerChange(t *testing.T) {
	var buf bytes.Buffer
	reg := prometheus.NewRegistry()
	cfg := DefaultHealthConfig()
	cfg.Role, cfg.Log, cfg.Registerer = "archive", slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})), reg
	h, err := NewHealth(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A second role of the same process shares the gauge (trending up).
	cfg2 := cfg
	cfg2.Role = "speed"
	if _, err := NewHealth(cfg2); err != nil {
		t.Fatal(err)
	}
	if got := gaugeValue(t, reg, "archive"); got != 1 {
		t.Fatalf("gauge before any failure = %v, want 1", got)
	}
	for i := 0; i < 100; i++ {
		if err := h.Failed("fetch", fmt.Errorf("dial: %w", errors.New("connection refused"))); err != nil {
			t.Fatalf("failure %d: %v, want a retry", i, err)
		}
	}
	if h.Up() || gaugeValue(t, reg, "archive") != 0 || gaugeValue(t, reg, "speed") != 1 {
		t.Fatalf("after failures: up %v, gauges archive %v speed %v; want down, 0, 1", h.Up(), gaugeValue(t, reg, "archive"), gaugeValue(t, reg, "speed"))
	}
	h.OK()
	h.OK()
	if !h.Up() || gaugeValue(t, reg, "archive") != 1 {
		t.Fatalf("after success: up %v, gauge %v", h.Up(), gaugeValue(t, reg, "archive"))
	}
	out := buf.String()
	if n := strings.Count(out, "Kafka unreachable"); n != 1 {
		t.Errorf("%d lines about the outage for 100 failed calls, want 1:\n%s", n, out)
	}
	if n := strings.Count(out, "Kafka reachable again"); n != 1 || !strings.Contains(out, "failed_calls=100") {
		t.Errorf("want one line about the return with failed_calls=100:\n%s", out)
	}
}

func TestHealthGivesUp(t *testing.T) {
	cfg := DefaultHealthConfig()
	cfg.Role = "speed"
	t.Run("not retryable at once", func(t *testing.T) {
		h, _ := NewHealth(cfg)
		err := h.Failed("dial", kafka.SASLAuthenticationFailed)
		if !errors.Is(err, ErrUnrecoverable) || !strings.Contains(err.Error(), "credentials") {
			t.Fatalf("got %v, want ErrUnrecoverable saying what to fix", err)
		}
	})
	t.Run("an unknown topic once it persists", func(t *testing.T) {
		h, _ := NewHealth(cfg)
		now := time.Unix(1e9, 0)
		h.now = func() time.Time { return now }
		if err := h.Failed("fetch", kafka.UnknownTopicOrPartition); err != nil {
			t.Fatal(err)
		}
		now = now.Add(cfg.MissingTopicAfter - time.Second)
		if err := h.Failed("fetch", kafka.UnknownTopicOrPartition); err != nil {
			t.Fatalf("gave up before MissingTopicAfter: %v", err)
		}
		// A success (the broker had only been loading its logs) starts the count again.
		h.OK()
		now = now.Add(time.Hour)
		if err := h.Failed("fetch", kafka.UnknownTopicOrPartition); err != nil {
			t.Fatalf("gave up on the first unknown-topic answer after a success: %v", err)
		}
		now = now.Add(cfg.MissingTopicAfter)
		if err := h.Failed("fetch", kafka.UnknownTopicOrPartition); !errors.Is(err, ErrUnrecoverable) || !strings.Contains(err.Error(), "does not exist") {
			t.Fatalf("after %s of unknown-topic answers: %v, want ErrUnrecoverable", cfg.MissingTopicAfter, err)
		}
	})
}

func TestBackoffBounded(t *testing.T) {
	b := Backoff{Min: time.Millisecond, Max: 4 * time.Millisecond}
	ctx := context.Background()
	start := time.Now()
	for i := 0; i < 10; i++ {
		b.Wait(ctx)
	}
	// 1+2+4*8 ms at most, with jitter at least half of it.
	if d := time.Since(start); d < 17*time.Millisecond || d > time.Second {
		t.Errorf("10 waits took %s, want between 17ms and well under a second", d)
	}
	if b.next != b.Max {
		t.Errorf("next pause %s, want the bound %s", b.next, b.Max)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if b.Wait(cctx) {
		t.Error("Wait on an ended context reported a full pause")
	}
}
