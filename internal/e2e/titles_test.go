package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trending/internal/itest"
	"trending/model"
	chddl "trending/schemas/clickhouse"
	chstore "trending/serving/store/clickhouse"
)

// TestSplitRolesTitles runs the split deployment as child processes on the real Kafka, MinIO
// and ClickHouse (the serving store, and the batch's exact engine): `trending speed`,
// `trending archive`, `trending merge --titles FILE`, then `trending batch run --titles FILE`
// for a closed hour. The hour's list from the merger, and then its exact list from the batch,
// give every item the title and thumbnail the file gives it (none to the items the file does
// not describe): the same metadata for the same item whichever layer wrote the list.
func TestSplitRolesTitles(t *testing.T) {
	ctx := itest.Context(t, 3*time.Minute)
	f := newFixture(t, ctx, "titles", 2)
	chAddr := itest.ClickHouse(t)
	bin := binary(t)

	o := chstore.DefaultOptions()
	o.Addr, o.Database = chAddr, itest.Underscored(t, "trending_e2e_titles")
	conn, err := o.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+o.Database); conn.Close() })
	if _, err := chddl.Apply(ctx, conn, o.Database); err != nil {
		t.Fatal(err)
	}
	st, err := chstore.Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dsn := "clickhouse://" + chAddr + "/" + o.Database

	// The producer's items are item-000 to item-299: the file describes the first 250, with
	// a thumbnail for the even ones.
	meta := map[string]model.Item{}
	var csv strings.Builder
	csv.WriteString("item_id,title,thumbnail_url\n")
	for i := range 250 {
		id := fmt.Sprintf("item-%03d", i)
		m := model.Item{Title: "Title of " + id}
		if i%2 == 0 {
			m.Thumbnail = "https://img.example/" + id + ".jpg"
		}
		meta[id] = m
		fmt.Fprintf(&csv, "%s,%s,%s\n", id, m.Title, m.Thumbnail)
	}
	titles := filepath.Join(t.TempDir(), "titles.csv")
	if err := os.WriteFile(titles, []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	roles := []*child{
		newChild(bin, "speed", f.args("speed", "--checkpoint-every", "1s", "--publish-every", "500ms",
			"--sketch-width", "16384", "--topics-sketch-width", "1024")),
		newChild(bin, "archive", f.args("archive", "--roll-age", "500ms")),
		newChild(bin, "merge", append([]string{"merge", "--store", dsn, "--titles", titles, "--publish-every", "500ms",
			"--metrics-addr", "", "--log-format", "json"}, f.kafka...)),
	}
	for _, c := range roles {
		c.start(t)
	}
	t.Cleanup(func() {
		for _, c := range roles {
			c.kill()
			if t.Failed() {
				t.Logf("%s output (last 25 lines):\n%s", c.name, c.logs.tail(25))
			}
		}
	})

	hour := time.Now().UTC().Truncate(time.Hour).Add(-2 * time.Hour)
	key := model.Key{Window: "hour", Start: hour}
	prod := f.startProducer(ctx, hour, time.Hour, 200, 8000, 0, 27)
	prod.wait(t)
	ends, err := f.kc.TopicOffsets(ctx, f.topic)
	if err != nil {
		t.Fatal(err)
	}
	// The merger's list of the hour, once it counts every event produced.
	var speed model.List
	waitFor(t, time.Now().Add(60*time.Second), "the merger's list of the hour with every event", func() (bool, string) {
		l, err := st.Get(ctx, key)
		if err != nil {
			return false, err.Error()
		}
		want := prod.truth.Range(hour, hour.Add(time.Hour)).Top(1)
		if l.Source != model.SourceSpeed || len(l.Items) == 0 || len(want) == 0 || l.Items[0].Views != want[0].Count {
			return false, fmt.Sprintf("%s list of %d items", l.Source, len(l.Items))
		}
		speed = l
		return true, ""
	})
	f.waitArchived(t, ctx, ends, 60*time.Second)

	// Every offset is archived (above); the archive's completeness marker may trail that by a
	// roll, so the hour is computed from what is archived (--force) rather than waited for.
	cmd := exec.CommandContext(ctx, bin, append([]string{"batch", "run", "--windows", "hour", "--from", hour.Format("2006-01-02T15"), "--force",
		"--clickhouse", dsn, "--store", dsn, "--titles", titles, "--log-format", "json"}, f.s3...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("batch run: %v\n%s", err, out.String())
	}
	exact, err := st.Get(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if exact.Source != model.SourceBatch || !exact.Exact || len(exact.Items) != 100 {
		t.Fatalf("after the batch: %s list, exact %v, %d items; want the batch's exact list of 100\n%s", exact.Source, exact.Exact, len(exact.Items), out.String())
	}
	check := func(what string, l model.List) (described int) {
		t.Helper()
		for _, it := range l.Items {
			m := meta[it.ItemID]
			if it.Title != m.Title || it.Thumbnail != m.Thumbnail {
				t.Errorf("%s: %s titled %q with thumbnail %q, the file gives %q and %q", what, it.ItemID, it.Title, it.Thumbnail, m.Title, m.Thumbnail)
			}
			if m.Title != "" {
				described++
			}
		}
		return described
	}
	ds, de := check("merger's list", speed), check("batch's list", exact)
	if ds == 0 || de == 0 || de == len(exact.Items) {
		t.Fatalf("%d of the merger's and %d of the batch's items described by the file: the test compares too little", ds, de)
	}
	t.Logf("merger's list: %d items, %d described; batch's list: %d items, %d described", len(speed.Items), ds, len(exact.Items), de)
}
