package itest_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/segmentio/kafka-go"

	"trending/internal/itest"
)

// TestKafkaSmoke creates a topic, produces with a Writer, consumes with a consumer-group
// Reader, commits, and reads the committed offset back from the broker.
func TestKafkaSmoke(t *testing.T) {
	addr := itest.Kafka(t)
	ctx := itest.Context(t, 90*time.Second)
	topic := itest.Name(t, "smoke")
	group := topic + "-group"

	conn, err := kafka.DialContext(ctx, "tcp", addr)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer conn.Close()
	ctrl, err := conn.Controller()
	if err != nil {
		t.Fatalf("controller: %v", err)
	}
	cc, err := kafka.DialContext(ctx, "tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		t.Fatalf("dial controller: %v", err)
	}
	defer cc.Close()
	if err := cc.CreateTopics(kafka.TopicConfig{Topic: topic, NumPartitions: 2, ReplicationFactor: 1}); err != nil {
		t.Fatalf("create topic: %v", err)
	}

	w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: topic, Balancer: &kafka.Hash{}, BatchTimeout: 10 * time.Millisecond, RequiredAcks: kafka.RequireAll}
	defer w.Close()
	const n = 10
	msgs := make([]kafka.Message, n)
	for i := range msgs {
		msgs[i] = kafka.Message{Key: []byte("V" + strconv.Itoa(i)), Value: []byte(`{"i":` + strconv.Itoa(i) + `}`)}
	}
	// The new topic's leader may not be known for a moment: retry the first write briefly.
	for attempt := 0; ; attempt++ {
		err = w.WriteMessages(ctx, msgs...)
		if err == nil || attempt == 20 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("write: %v", err)
	}

	r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, GroupID: group, StartOffset: kafka.FirstOffset, MaxWait: 100 * time.Millisecond})
	defer r.Close()
	last := map[int]int64{}
	seen := map[string]bool{}
	for len(seen) < n {
		m, err := r.FetchMessage(ctx)
		if err != nil {
			t.Fatalf("fetch after %d messages: %v", len(seen), err)
		}
		seen[string(m.Key)] = true
		last[m.Partition] = m.Offset
		if err := r.CommitMessages(ctx, m); err != nil {
			t.Fatalf("commit: %v", err)
		}
	}

	client := &kafka.Client{Addr: kafka.TCP(addr), Timeout: 10 * time.Second}
	parts := []int{0, 1}
	resp, err := client.OffsetFetch(ctx, &kafka.OffsetFetchRequest{GroupID: group, Topics: map[string][]int{topic: parts}})
	if err != nil {
		t.Fatalf("offset fetch: %v", err)
	}
	got := map[int]int64{}
	for _, p := range resp.Topics[topic] {
		if p.Error != nil {
			t.Fatalf("offset fetch partition %d: %v", p.Partition, p.Error)
		}
		got[p.Partition] = p.CommittedOffset
	}
	for p, off := range last {
		// The committed offset is the next one to read.
		if got[p] != off+1 {
			t.Errorf("partition %d: committed offset %d, want %d", p, got[p], off+1)
		}
	}
}

// TestMinIOSmoke creates a bucket, puts, lists and gets an object, and checks that a
// conditional put (If-None-Match: *) is refused when the key exists.
func TestMinIOSmoke(t *testing.T) {
	cfg := itest.S3(t)
	ctx := itest.Context(t, 60*time.Second)
	cli := s3.New(s3.Options{
		BaseEndpoint: aws.String(cfg.Endpoint),
		Region:       cfg.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, ""),
		UsePathStyle: true,
	})
	bucket := itest.Name(t, "smoke")
	if _, err := cli.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	body := []byte("hello, archive")
	key := "a/b/object.txt"
	if _, err := cli.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)}); err != nil {
		t.Fatalf("put: %v", err)
	}
	list, err := cli.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("a/")})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	if len(list.Contents) != 1 || aws.ToString(list.Contents[0].Key) != key || aws.ToInt64(list.Contents[0].Size) != int64(len(body)) {
		t.Fatalf("list: got %+v, want one object %s of %d bytes", list.Contents, key, len(body))
	}
	get, err := cli.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	got, err := io.ReadAll(get.Body)
	get.Body.Close()
	if err != nil || !bytes.Equal(got, body) {
		t.Fatalf("get: %q, %v; want %q", got, err, body)
	}
	// Conditional create: a second writer of the same key must be refused with 412.
	_, err = cli.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte("other")), IfNoneMatch: aws.String("*")})
	var apiErr smithy.APIError
	if !errors.As(err, &apiErr) || apiErr.ErrorCode() != "PreconditionFailed" {
		t.Fatalf("conditional put over an existing key: got %v, want PreconditionFailed", err)
	}
	// And a conditional create of a new key succeeds.
	if _, err := cli.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("a/new.txt"), Body: bytes.NewReader(body), IfNoneMatch: aws.String("*")}); err != nil {
		t.Fatalf("conditional put of a new key: %v", err)
	}
}

// TestClickHouseSmoke creates a MergeTree table, batch-inserts with clickhouse-go v2 (columns
// listed, as 18.16 requires), queries it, and swaps a partition in from a staging table with
// REPLACE PARTITION: the atomic overwrite the batch layer relies on.
func TestClickHouseSmoke(t *testing.T) {
	addr := itest.ClickHouse(t)
	ctx := itest.Context(t, 60*time.Second)
	conn, err := clickhouse.Open(&clickhouse.Options{Addr: []string{addr}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	defer conn.Close()
	if err := conn.Ping(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	table := itest.Underscored(t, "smoke")
	staging := table + "_staging"
	ddl := `CREATE TABLE %s (window_start DateTime, item_id String, views UInt64)
		ENGINE = MergeTree() PARTITION BY toYYYYMMDD(window_start) ORDER BY (window_start, item_id)`
	for _, tb := range []string{table, staging} {
		if err := conn.Exec(ctx, sprintf(ddl, tb)); err != nil {
			t.Fatalf("create %s: %v", tb, err)
		}
		t.Cleanup(func() { _ = conn.Exec(context.Background(), "DROP TABLE IF EXISTS "+tb) })
	}
	day := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)
	insert := func(tb string, rows map[string]uint64) {
		t.Helper()
		b, err := conn.PrepareBatch(ctx, "INSERT INTO "+tb+" (window_start, item_id, views)")
		if err != nil {
			t.Fatalf("prepare batch: %v", err)
		}
		for item, v := range rows {
			if err := b.Append(day, item, v); err != nil {
				t.Fatalf("append: %v", err)
			}
		}
		if err := b.Send(); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	sum := func() (n uint64, items uint64) {
		t.Helper()
		if err := conn.QueryRow(ctx, "SELECT sum(views), count() FROM "+table).Scan(&n, &items); err != nil {
			t.Fatalf("query: %v", err)
		}
		return n, items
	}
	insert(table, map[string]uint64{"V1": 10, "V2": 20, "V3": 30})
	if n, items := sum(); n != 60 || items != 3 {
		t.Fatalf("after insert: sum %d over %d rows, want 60 over 3", n, items)
	}
	insert(staging, map[string]uint64{"V1": 1, "V9": 2})
	if err := conn.Exec(ctx, "ALTER TABLE "+table+" REPLACE PARTITION 20261114 FROM "+staging); err != nil {
		t.Fatalf("replace partition: %v", err)
	}
	if n, items := sum(); n != 3 || items != 2 {
		t.Fatalf("after replace partition: sum %d over %d rows, want 3 over 2 (the staging rows only)", n, items)
	}
}
