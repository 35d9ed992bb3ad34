package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"

	"trending/internal/itest"
	"trending/serving/store/storetest"
)

var arrowTargets = []string{
	"/v1/trending?window=hour&limit=100", // partial, error bound, unicode titles
	"/v1/trending?window=hour&limit=7&start=" + storetest.T0.Add(-time.Hour).Format(time.RFC3339), // exact, calendar
	"/v1/trending?window=all&limit=1",
	"/v1/trending?window=hour&start=" + storetest.T0.Add(-3*time.Hour).Format(time.RFC3339), // provisional, dropped_late 3
}

// TestArrowRoundTrip decodes the Arrow stream with arrow-go and compares it with the JSON body.
func TestArrowRoundTrip(t *testing.T) {
	f := newFixture(t, nil)
	for _, target := range arrowTargets {
		t.Run(target, func(t *testing.T) {
			want := decode[ListResponse](t, f.get(target))
			w := f.get(target, "Accept", ArrowMediaType, "Accept-Encoding", "gzip")
			if w.Code != 200 || w.Header().Get("Content-Type") != ArrowMediaType || w.Header().Get("Content-Encoding") != "" {
				t.Fatalf("status %d headers %v", w.Code, w.Header())
			}
			if !strings.HasSuffix(w.Header().Get("ETag"), `-arrow"`) {
				t.Errorf("ETag %q does not name the Arrow variant", w.Header().Get("ETag"))
			}
			r, err := ipc.NewReader(bytes.NewReader(w.Body.Bytes()))
			if err != nil {
				t.Fatal(err)
			}
			defer r.Release()
			md := map[string]string{}
			for i, k := range r.Schema().Metadata().Keys() {
				md[k] = r.Schema().Metadata().Values()[i]
			}
			compareMetadata(t, md, want)
			if strings.Contains(target, storetest.T0.Add(-3*time.Hour).Format(time.RFC3339)) && (md["status"] != "provisional" || md["dropped_late"] != "3") {
				t.Errorf("provisional list: metadata status %q dropped_late %q, want provisional, 3", md["status"], md["dropped_late"])
			}
			var rows int
			for r.Next() {
				rec := r.RecordBatch()
				rank := rec.Column(0).(*array.Int32)
				id := rec.Column(1).(*array.String)
				title := rec.Column(2).(*array.String)
				views := rec.Column(3).(*array.Uint64)
				exact := rec.Column(4).(*array.Boolean)
				thumb := rec.Column(5).(*array.String)
				for i := 0; i < int(rec.NumRows()); i++ {
					it := want.Items[rows]
					if int(rank.Value(i)) != it.Rank || id.Value(i) != it.ItemID || title.Value(i) != it.Title || views.Value(i) != it.Views ||
						exact.Value(i) != it.Exact || thumb.Value(i) != it.ThumbnailURL {
						t.Fatalf("row %d differs from JSON item %+v", rows, it)
					}
					rows++
				}
			}
			if r.Err() != nil || rows != len(want.Items) {
				t.Fatalf("%d rows, want %d (%v)", rows, len(want.Items), r.Err())
			}
		})
	}
}

// compareMetadata checks the Arrow schema metadata carries every list-level JSON field.
func compareMetadata(t *testing.T, md map[string]string, want ListResponse) {
	t.Helper()
	ts := func(tm time.Time) string { return tm.Format(time.RFC3339Nano) }
	exp := map[string]string{"window": want.Window, "as_of": ts(want.AsOf), "version": strconv.FormatInt(want.Version, 10),
		"source": string(want.Source), "status": string(want.Status), "exact": strconv.FormatBool(want.Exact),
		"dropped_late": strconv.FormatUint(want.DroppedLate, 10), "partial": strconv.FormatBool(want.Incomplete),
		"computed_at": ts(want.ComputedAt)}
	if !want.Start.IsZero() {
		exp["start"], exp["end"] = ts(want.Start), ts(want.End)
	}
	if !want.WindowStart.IsZero() {
		exp["window_start"] = ts(want.WindowStart)
	}
	if !want.WindowEnd.IsZero() {
		exp["window_end"] = ts(want.WindowEnd)
	}
	if len(want.StalePartitions) > 0 {
		exp["stale_partitions"] = strings.Trim(strings.Join(strings.Fields(fmt.Sprint(want.StalePartitions)), ","), "[]")
	}
	if want.ErrorBound != nil {
		exp["error_bound.max_overcount"] = strconv.FormatFloat(want.ErrorBound.MaxOvercount, 'g', -1, 64)
		exp["error_bound.probability"] = strconv.FormatFloat(want.ErrorBound.Probability, 'g', -1, 64)
	}
	if !want.Boundary.IsZero() {
		exp["boundary"] = want.Boundary.Format(time.RFC3339Nano)
	}
	if want.Cutoff > 0 {
		exp["cutoff"] = strconv.FormatUint(want.Cutoff, 10)
	}
	for k, v := range exp {
		if md[k] != v {
			t.Errorf("metadata %s = %q, want %q", k, md[k], v)
		}
	}
	if len(md) != len(exp) {
		t.Errorf("metadata %v, want exactly %v", md, exp)
	}
}

// TestArrowPyarrow reads the stream with pyarrow, as an analyst would, and compares it with the
// JSON body. Without pyarrow it skips, unless the integration environment is set (make test),
// where it fails saying to install it.
func TestArrowPyarrow(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "import pyarrow").Run()
	}
	if err != nil {
		if os.Getenv(itest.EnvS3) != "" {
			t.Fatalf("pyarrow is needed to check the Arrow output: pip install pyarrow (python3 -c 'import pyarrow': %v)", err)
		}
		t.Skipf("pyarrow not installed (pip install pyarrow); %s unset, so not required", itest.EnvS3)
	}
	f := newFixture(t, nil)
	script, _ := filepath.Abs(filepath.Join("testdata", "read_arrow.py"))
	for _, target := range arrowTargets {
		t.Run(target, func(t *testing.T) {
			want := decode[ListResponse](t, f.get(target))
			w := f.get(target, "Accept", ArrowMediaType)
			cmd := exec.Command(py, script)
			cmd.Stdin = bytes.NewReader(w.Body.Bytes())
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("pyarrow: %v\n%s", err, stderr.String())
			}
			var got struct {
				Metadata map[string]string
				Types    map[string]string
				Columns  struct {
					Rank   []int    `json:"rank"`
					ItemID []string `json:"item_id"`
					Title  []string `json:"title"`
					Views  []uint64 `json:"views"`
					Exact  []bool   `json:"exact"`
					Thumb  []string `json:"thumbnail_url"`
				}
				Batches int
			}
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("pyarrow output %q: %v", out, err)
			}
			wantTypes := map[string]string{"rank": "int32", "item_id": "string", "title": "string", "views": "uint64", "exact": "bool", "thumbnail_url": "string"}
			for k, v := range wantTypes {
				if got.Types[k] != v {
					t.Errorf("column %s: pyarrow type %q, want %q", k, got.Types[k], v)
				}
			}
			compareMetadata(t, got.Metadata, want)
			if len(got.Columns.ItemID) != len(want.Items) || got.Batches != 1 {
				t.Fatalf("pyarrow read %d rows in %d batches, want %d in 1", len(got.Columns.ItemID), got.Batches, len(want.Items))
			}
			for i, it := range want.Items {
				if got.Columns.Rank[i] != it.Rank || got.Columns.ItemID[i] != it.ItemID || got.Columns.Title[i] != it.Title ||
					got.Columns.Views[i] != it.Views || got.Columns.Exact[i] != it.Exact || got.Columns.Thumb[i] != it.ThumbnailURL {
					t.Fatalf("row %d: pyarrow (%d %q %q %d %v), JSON %+v", i, got.Columns.Rank[i], got.Columns.ItemID[i],
						got.Columns.Title[i], got.Columns.Views[i], got.Columns.Exact[i], it)
				}
			}
		})
	}
}
