// Package itest gates integration tests on the real servers (Kafka, MinIO, ClickHouse).
//
// Each accessor reads the address `make test` exports (infra/local/services.sh env). Unset:
// the test is skipped with a message saying how to run it. Set but unreachable: the test
// fails, so CI, which always sets them, can never skip silently.
package itest

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// Environment variables that `make test` sets.
const (
	EnvKafka       = "TRENDING_IT_KAFKA"
	EnvS3          = "TRENDING_IT_S3"
	EnvS3AccessKey = "TRENDING_IT_S3_ACCESS_KEY"
	EnvS3SecretKey = "TRENDING_IT_S3_SECRET_KEY"
	EnvClickHouse  = "TRENDING_IT_CLICKHOUSE"
	// EnvClickHouseCluster names the two-shard cluster (remote_servers) over the
	// ClickHouse server of EnvClickHouse and a second one (infra/local/clickhouse2.sh).
	EnvClickHouseCluster = "TRENDING_IT_CLICKHOUSE_CLUSTER"
	// EnvFaults is set by `make test`'s second phase, which runs the tests that stop a
	// shared server (named TestFault*) one package at a time: beside the other packages'
	// tests they would fail them.
	EnvFaults = "TRENDING_IT_FAULTS"
)

func need(t testing.TB, env, what string) string {
	t.Helper()
	v := os.Getenv(env)
	if v == "" {
		t.Skipf("integration test: %s not set; run `make test` (starts %s) or export %s", env, what, env)
	}
	return v
}

func reachable(t testing.TB, env, hostport string) {
	t.Helper()
	c, err := net.DialTimeout("tcp", hostport, 3*time.Second)
	if err != nil {
		t.Fatalf("%s=%s is set but unreachable: %v (start it with `make services-up`)", env, hostport, err)
	}
	c.Close()
}

// Kafka returns the address of the real Kafka broker.
func Kafka(t testing.TB) string {
	t.Helper()
	addr := need(t, EnvKafka, "Kafka")
	reachable(t, EnvKafka, addr)
	return addr
}

// ClickHouse returns the native-protocol address of the real ClickHouse server.
func ClickHouse(t testing.TB) string {
	t.Helper()
	addr := need(t, EnvClickHouse, "ClickHouse")
	reachable(t, EnvClickHouse, addr)
	return addr
}

// ClickHouseCluster returns the native-protocol address of the real ClickHouse server and
// the name of the two-shard cluster it is the first shard of (`trending migrate --cluster`).
// Its servers run ZooKeeper-replicated tables and ON CLUSTER DDL, so a test that creates a
// cluster database drops it ON CLUSTER when done.
func ClickHouseCluster(t testing.TB) (addr, cluster string) {
	t.Helper()
	addr = ClickHouse(t)
	return addr, need(t, EnvClickHouseCluster, "the two-shard ClickHouse cluster")
}

// S3Config is how tests reach the real S3-compatible server (MinIO).
type S3Config struct {
	Endpoint  string // http://127.0.0.1:39000
	AccessKey string
	SecretKey string
	Region    string
}

// S3 returns the real MinIO endpoint and credentials.
func S3(t testing.TB) S3Config {
	t.Helper()
	ep := need(t, EnvS3, "MinIO")
	u, err := url.Parse(ep)
	if err != nil || u.Host == "" {
		t.Fatalf("%s=%q: want a URL like http://127.0.0.1:39000", EnvS3, ep)
	}
	reachable(t, EnvS3, u.Host)
	return S3Config{
		Endpoint:  ep,
		AccessKey: os.Getenv(EnvS3AccessKey),
		SecretKey: os.Getenv(EnvS3SecretKey),
		Region:    "us-east-1",
	}
}

var seq atomic.Int64

// Name returns a name unique to this test run, safe for topics, buckets and tables:
// lowercase letters, digits and dashes (use Underscored for SQL identifiers).
//
// With the real Kafka set (EnvKafka), the topics named by it or after it (name.dlq,
// name.partials, ...) are deleted when the test ends, after its cleanups registered later (a
// pipeline it started): the shared broker does not gather a run's thousands of topics, whose
// metadata every client reads.
func Name(t testing.TB, prefix string) string {
	n := strings.ToLower(fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano()%1e10, seq.Add(1)))
	if broker := os.Getenv(EnvKafka); broker != "" {
		t.Cleanup(func() { deleteTopics(t, broker, n) })
	}
	return n
}

// deleteTopics deletes the topics on broker named name or name followed by a dot or dash.
func deleteTopics(t testing.TB, broker, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tr := &kafka.Transport{}
	defer tr.CloseIdleConnections()
	c := &kafka.Client{Addr: kafka.TCP(broker), Transport: tr}
	meta, err := c.Metadata(ctx, &kafka.MetadataRequest{})
	if err != nil {
		t.Logf("itest: delete the topics named %s*: %v", name, err)
		return
	}
	var topics []string
	for _, tp := range meta.Topics {
		if tp.Name == name || strings.HasPrefix(tp.Name, name+".") || strings.HasPrefix(tp.Name, name+"-") {
			topics = append(topics, tp.Name)
		}
	}
	if len(topics) == 0 {
		return
	}
	if _, err := c.DeleteTopics(ctx, &kafka.DeleteTopicsRequest{Topics: topics}); err != nil {
		t.Logf("itest: delete topics %v: %v", topics, err)
	}
}

// Underscored is Name with dashes replaced, for SQL identifiers.
func Underscored(t testing.TB, prefix string) string {
	return strings.ReplaceAll(Name(t, prefix), "-", "_")
}

// Context returns a context that ends with the test or after d, whichever is first.
func Context(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
