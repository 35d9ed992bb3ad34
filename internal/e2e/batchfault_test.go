package e2e

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"trending/archive"
	"trending/internal/itest"
	"trending/model"
	chddl "trending/schemas/clickhouse"
	"trending/serving/store"
	boltstore "trending/serving/store/bolt"
	chstore "trending/serving/store/clickhouse"
)

// TestFaultBatchRunClickHouseStopped runs `trending batch run` as a child process, as cron or
// Airflow would, over an archive the real archiver wrote from the real Kafka, with the exact
// engine in the real ClickHouse and the lists going to a bolt serving store. A first run
// publishes the first hour. With ClickHouse stopped, a run over both hours exits with code 1
// and one line on stderr that names the cause, and leaves the served lists as they were (the
// first hour's list unchanged, the second hour's still absent). After ClickHouse starts
// again, the same command publishes both hours equal to the truth.
func TestFaultBatchRunClickHouseStopped(t *testing.T) {
	itest.Faults(t)
	ctx := itest.Context(t, 3*time.Minute)
	f := newFixture(t, ctx, "batchch", 2)
	chAddr := itest.ClickHouse(t)
	bin := binary(t)
	testStart := time.Now()

	o := chstore.DefaultOptions()
	o.Addr, o.Database = chAddr, itest.Underscored(t, "trending_e2e")
	conn, err := o.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c, err := o.Conn(context.Background()); err == nil { // a new connection: the server restarted
			c.Exec(context.Background(), "DROP DATABASE IF EXISTS "+o.Database)
			c.Close()
		}
	})
	if _, err := chddl.Apply(ctx, conn, o.Database); err != nil {
		t.Fatal(err)
	}
	conn.Close()

	// Two closed hours archived.
	hours := []time.Time{time.Now().UTC().Truncate(time.Hour).Add(-3 * time.Hour)}
	hours = append(hours, hours[0].Add(time.Hour))
	prod := f.startProducer(ctx, hours[0], 2*time.Hour, 200, 3000, 0, 182)
	prod.wait(t)
	ends, err := f.kc.TopicOffsets(ctx, f.topic)
	if err != nil {
		t.Fatal(err)
	}
	arch := newChild(bin, "archive", f.args("archive", "--roll-age", "500ms"))
	arch.start(t)
	defer arch.kill()
	f.waitArchived(t, ctx, ends, 60*time.Second)
	rd := archive.NewReader(f.obj)
	waitFor(t, time.Now().Add(30*time.Second), "the archive to call both hours complete", func() (bool, string) {
		for _, h := range hours {
			if why, err := rd.Incomplete(ctx, h, 10*time.Minute); err != nil || why != "" {
				return false, h.Format(time.RFC3339) + ": " + why
			}
		}
		return true, ""
	})
	arch.kill()

	dir := t.TempDir()
	storePath := filepath.Join(dir, "serving.db")
	batchRun := func(end time.Time) (code int, stderr string, took time.Duration) {
		t.Helper()
		cmd := exec.CommandContext(ctx, bin, append([]string{"batch", "run", "--window", "hour",
			"--start", hours[0].Format("2006-01-02T15"), "--end", end.Format("2006-01-02T15"),
			"--clickhouse", "clickhouse://" + chAddr + "/" + o.Database, "--store", "bolt:" + storePath, "--log-format", "json"}, f.s3...)...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		start := time.Now()
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ee):
			code = ee.ExitCode()
		default:
			t.Fatalf("batch run: %v", err)
		}
		return code, errb.String(), time.Since(start)
	}
	served := func() map[time.Time]*model.List {
		t.Helper()
		st, err := boltstore.Open(storePath)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		out := map[time.Time]*model.List{}
		for _, h := range hours {
			l, err := st.Get(ctx, model.Key{Window: "hour", Start: h})
			switch {
			case err == nil:
				out[h] = &l
			case !errors.Is(err, store.ErrNotFound):
				t.Fatal(err)
			}
		}
		return out
	}

	if code, stderr, took := batchRun(hours[1]); code != 0 {
		t.Fatalf("the first run (the first hour, ClickHouse up) exited %d after %s:\n%s", code, took, stderr)
	}
	before := served()
	if before[hours[0]] == nil || before[hours[1]] != nil {
		t.Fatalf("after the first run: want the first hour's list only, have %v", before)
	}

	itest.Stop(t, "clickhouse")
	code, stderr, took := batchRun(hours[1].Add(time.Hour))
	last := lastLine(stderr)
	t.Logf("with ClickHouse stopped: exit %d after %s: %s", code, took.Round(time.Millisecond), last)
	if code != 1 {
		t.Errorf("exit code %d, want 1 (a failure, not a usage error)", code)
	}
	if !strings.HasPrefix(last, "trending: ") || !strings.Contains(strings.ToLower(last), "clickhouse") {
		t.Errorf("stderr's last line does not say the run failed on ClickHouse: %q", last)
	}
	if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine ") {
		t.Errorf("stderr holds a panic:\n%s", stderr)
	}
	if after := served(); !reflect.DeepEqual(after, before) {
		t.Errorf("the failed run changed the served lists: first hour version %d -> %v, second hour %v",
			before[hours[0]].Version, after[hours[0]], after[hours[1]] != nil)
	}

	itest.Start(t, "clickhouse")
	if code, stderr, took := batchRun(hours[1].Add(time.Hour)); code != 0 {
		t.Fatalf("the rerun after ClickHouse started exited %d after %s:\n%s", code, took, stderr)
	}
	after := served()
	for _, h := range hours {
		l := after[h]
		if l == nil {
			t.Fatalf("hour %s: no list after the rerun", h.Format(time.RFC3339))
		}
		if want := prod.truth.Range(h, h.Add(time.Hour)).Top(100); l.Source != model.SourceBatch || !l.Exact || !sameList(l.Items, want) {
			t.Errorf("hour %s after the rerun (source %s, exact %v, %d items) differs from the truth's top %d", h.Format(time.RFC3339), l.Source, l.Exact, len(l.Items), len(want))
		}
	}
	if after[hours[0]].Version <= before[hours[0]].Version {
		t.Errorf("the rerun did not republish the first hour: version %d, before %d", after[hours[0]].Version, before[hours[0]].Version)
	}
	t.Logf("done in %s", time.Since(testStart).Round(100*time.Millisecond))
}
