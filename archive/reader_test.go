package archive

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"

	"trending/internal/objstore"
)

type pk struct {
	p int32
	o int64
}

var hour0 = time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)

// logEvents returns a partition's log of n events; event times wander over hours
// hour0..hour0+3h with some events arriving late into earlier hours.
func logEvents(rng *rand.Rand, p int32, n int) []Row {
	rows := make([]Row, n)
	for i := range rows {
		// Mostly advancing time, with one event in five up to 90 minutes late.
		ts := hour0.UnixMilli() + int64(i)*int64(3*time.Hour/time.Millisecond)/int64(n)
		if rng.IntN(5) == 0 {
			ts -= rng.Int64N(int64(90 * time.Minute / time.Millisecond))
		}
		ts = max(ts, hour0.UnixMilli())
		rows[i] = Row{ItemID: fmt.Sprintf("V%d", rng.IntN(20)), Count: uint32(1 + rng.IntN(9)), TS: ts,
			Region: []string{"", "eu"}[rng.IntN(2)], Partition: p, Offset: int64(i), IngestTS: hour0.UnixMilli() + int64(i)}
	}
	return rows
}

// putRoll uploads one roll of log[first..last] the way the archiver does.
func putRoll(t testing.TB, st *objstore.Client, log []Row, first, last int64) {
	t.Helper()
	rows := slices.Clone(log[first : last+1])
	objs, _ := buildObjects(layout{DefaultRoot}, rows[0].Partition, first, last, rows, nil, EncodeOptions{RowGroupRows: 16})
	for _, o := range objs {
		if _, err := st.Put(context.Background(), o.key, o.body); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadHourDedupProperty archives random logs with random roll boundaries and random
// crash-and-replay (a roll uploaded but not committed, so the next run rolls again from the
// last commit with other boundaries), and checks every hour reads back exactly its events.
func TestReadHourDedupProperty(t *testing.T) {
	st := embeddedStore(t)
	r := NewReader(st)
	ctx := context.Background()
	for iter := range 4 {
		t.Run(fmt.Sprint(iter), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(iter), 7))
			st := embeddedStore(t)
			r := NewReader(st)
			truth := map[time.Time]map[pk]Row{}
			dups := 0
			for p := range int32(3) {
				log := logEvents(rng, p, 150+rng.IntN(100))
				for _, row := range log {
					h := hourOf(row.TS)
					if truth[h] == nil {
						truth[h] = map[pk]Row{}
					}
					truth[h][pk{row.Partition, row.Offset}] = row
				}
				committed := int64(0)
				for committed < int64(len(log)) {
					last := min(committed+int64(1+rng.IntN(60)), int64(len(log))) - 1
					putRoll(t, st, log, committed, last)
					if rng.IntN(3) == 0 {
						dups++ // crash before commit: the next roll starts at committed again
						continue
					}
					committed = last + 1
				}
			}
			if dups == 0 {
				t.Fatal("BUG: the test made no duplicate rolls; pick other seeds")
			}
			for h := hour0; h.Before(hour0.Add(4 * time.Hour)); h = h.Add(time.Hour) {
				got := map[pk]Row{}
				err := r.ReadHour(ctx, h.Add(17*time.Minute), func(row Row) error {
					k := pk{row.Partition, row.Offset}
					if _, ok := got[k]; ok {
						return fmt.Errorf("event %v read twice", k)
					}
					got[k] = row
					return nil
				})
				if err != nil {
					t.Fatalf("hour %s: %v", h, err)
				}
				if len(got) != len(truth[h]) {
					t.Fatalf("hour %s: read %d events, want %d", h, len(got), len(truth[h]))
				}
				for k, want := range truth[h] {
					if got[k] != want {
						t.Fatalf("hour %s event %v: got %+v, want %+v", h, k, got[k], want)
					}
				}
				cols, err := r.ReadColumns(ctx, h)
				if err != nil || cols.Len() != len(truth[h]) || len(cols.ItemID) != cols.Len() || len(cols.TS) != cols.Len() {
					t.Fatalf("hour %s: ReadColumns %d events (err %v), want %d", h, cols.Len(), err, len(truth[h]))
				}
			}
		})
	}
	// The outer store is empty: an hour with nothing is no error.
	if n, err := r.ReadColumns(ctx, hour0); err != nil || n.Len() != 0 {
		t.Fatalf("empty archive: %d events, %v", n.Len(), err)
	}
}

func TestReadHourRefusesBadObjects(t *testing.T) {
	ctx := context.Background()
	rows := sampleRows(10, 100) // partition 3, offsets 100..109, hour 10:00
	body, err := encodeFile(slices.Clone(rows), 3, 100, 109, DefaultEncodeOptions())
	if err != nil {
		t.Fatal(err)
	}
	lay := layout{DefaultRoot}
	for _, tc := range []struct {
		name, key string
		body      []byte
	}{
		{"foreign name", lay.hourPrefix(hour0) + "part-0000.parquet", body},
		{"offsets outside the name's range", lay.objectKey(hour0, 3, 100, 105), body},
		{"other partition than the name", lay.objectKey(hour0, 4, 100, 109), body},
		{"other hour than the folder", lay.objectKey(hour0.Add(time.Hour), 3, 100, 109), body},
		{"not parquet", lay.objectKey(hour0, 3, 100, 109), []byte("PAR1 not really")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := embeddedStore(t)
			if _, err := st.Put(ctx, tc.key, tc.body); err != nil {
				t.Fatal(err)
			}
			h, _ := parseHourFromKey(tc.key)
			err := NewReader(st).ReadHour(ctx, h, func(Row) error { return nil })
			if !errors.Is(err, ErrBadObject) {
				t.Fatalf("got %v, want ErrBadObject", err)
			}
		})
	}
	t.Run("non-parquet files are ignored", func(t *testing.T) {
		st := embeddedStore(t)
		if _, err := st.Put(ctx, lay.hourPrefix(hour0)+"_SUCCESS", nil); err != nil {
			t.Fatal(err)
		}
		if objs, err := NewReader(st).ListHour(ctx, hour0); err != nil || len(objs) != 0 {
			t.Fatalf("ListHour = %v, %v; want nothing", objs, err)
		}
	})
}

// parseHourFromKey reads dt=/hour= back from a key, for the table above.
func parseHourFromKey(key string) (time.Time, error) {
	var y, mo, d, h int
	_, err := fmt.Sscanf(key[len("archive/views/"):], "dt=%d-%d-%d/hour=%d/", &y, &mo, &d, &h)
	return time.Date(y, time.Month(mo), d, h, 0, 0, 0, time.UTC), err
}

func TestFingerprint(t *testing.T) {
	ctx := context.Background()
	st := embeddedStore(t)
	r := NewReader(st)
	empty, err := r.Fingerprint(ctx, hour0)
	if err != nil {
		t.Fatal(err)
	}
	log := logEvents(rand.New(rand.NewPCG(1, 2)), 0, 40)
	for i := range log {
		log[i].TS = hour0.UnixMilli() + int64(i) // all in hour0
	}
	putRoll(t, st, log, 0, 19)
	f1, _ := r.Fingerprint(ctx, hour0)
	f1again, _ := r.Fingerprint(ctx, hour0)
	if f1 == empty || f1 != f1again {
		t.Fatalf("fingerprint must change with contents and only with them: empty %s, one roll %s then %s", empty, f1, f1again)
	}
	putRoll(t, st, log, 20, 39) // late data for a closed hour
	if f2, _ := r.Fingerprint(ctx, hour0); f2 == f1 {
		t.Fatal("a new object did not change the fingerprint")
	}
	if other, _ := r.Fingerprint(ctx, hour0.Add(time.Hour)); other != empty {
		t.Fatal("another hour's fingerprint changed")
	}
}

func TestComplete(t *testing.T) {
	h := hour0
	end := h.Add(time.Hour)
	late := 10 * time.Minute
	prog := func(p int32, wm, caught time.Time) Progress {
		return Progress{Partition: p, Watermark: wm, CaughtUpAt: caught}
	}
	for _, tc := range []struct {
		name       string
		progress   []Progress
		partitions int
		want       bool
	}{
		{"no markers", nil, 2, false},
		{"no partitions known", []Progress{prog(0, end.Add(late), time.Time{})}, 0, false},
		{"all past end plus lateness", []Progress{prog(0, end.Add(late), time.Time{}), prog(1, end.Add(2*late), time.Time{})}, 2, true},
		{"one partition inside lateness", []Progress{prog(0, end.Add(late), time.Time{}), prog(1, end.Add(late-time.Millisecond), time.Time{})}, 2, false},
		{"idle partition caught up after the deadline", []Progress{prog(0, end.Add(late), time.Time{}), prog(1, h, end.Add(late))}, 2, true},
		{"idle partition caught up before the deadline", []Progress{prog(0, end.Add(late), time.Time{}), prog(1, h, end)}, 2, false},
		{"a partition without a marker", []Progress{prog(0, end.Add(late), time.Time{})}, 2, false},
		{"the last partition without a marker", []Progress{prog(0, end.Add(late), time.Time{}), prog(1, end.Add(late), time.Time{})}, 3, false},
		{"every partition has a marker", []Progress{prog(0, end.Add(late), time.Time{}), prog(1, end.Add(late), time.Time{})}, 2, true},
		{"a marker of no partition of the topic is ignored", []Progress{prog(0, end.Add(late), time.Time{}), prog(5, h, time.Time{})}, 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			why := incomplete(tc.progress, tc.partitions, h.Add(30*time.Minute), late)
			if got := why == ""; got != tc.want {
				t.Fatalf("complete = %v (%q), want %v", got, why, tc.want)
			}
		})
	}
}

// rowV2 is Row with a column added the way the evolution rule allows (optional) plus one
// renamed away: an old reader must ignore the new column.
type rowV2 struct {
	Row
	Device *string `parquet:"device,optional"`
}

func TestEvolutionReadersIgnoreUnknownColumns(t *testing.T) {
	rows := sampleRows(20, 0)
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[rowV2](&buf)
	dev := "tv"
	for _, r := range rows {
		if _, err := w.Write([]rowV2{{Row: r, Device: &dev}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	var got []Row
	if err := readFile(buf.Bytes(), func(r Row) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, rows) {
		t.Fatalf("read %v\nwant %v", got, rows)
	}
}

func TestEncodeSortsByEventTime(t *testing.T) {
	rows := sampleRows(1000, 0)
	body, err := encodeFile(rows, 3, 0, 999, EncodeOptions{RowGroupRows: 300})
	if err != nil {
		t.Fatal(err)
	}
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(f.RowGroups()); n != 4 {
		t.Fatalf("%d row groups, want 4 of at most 300 rows", n)
	}
	var prev int64 = -1
	if err := readFile(body, func(r Row) error {
		if r.TS < prev {
			return fmt.Errorf("ts %d after %d: not sorted", r.TS, prev)
		}
		prev = r.TS
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

func TestParseObjectName(t *testing.T) {
	lay := layout{"archive"}
	for _, tc := range []struct {
		key  string
		want span
		ok   bool
	}{
		{lay.objectKey(hour0, 7, 1234, 5678), span{7, 1234, 5678}, true},
		{"archive/views/dt=2026-11-14/hour=10/p0007-o000000001234-o000000005678.parquet", span{7, 1234, 5678}, true},
		{"x/p12345-o1234567890123-o1234567890124.parquet", span{12345, 1234567890123, 1234567890124}, true},
		{"x/p0007-o000000005678-o000000001234.parquet", span{}, false}, // first > last
		{"x/p7-o000000001234-o000000005678.parquet", span{}, false},
		{"x/p0007-o1234-o5678.parquet", span{}, false},
		{"x/part-0.parquet", span{}, false},
	} {
		got, err := parseObjectName(tc.key)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseObjectName(%q) = %+v, %v; want %+v ok=%v", tc.key, got, err, tc.want, tc.ok)
		}
	}
	if k := lay.objectKey(hour0, 7, 1234, 5678); k != "archive/views/dt=2026-11-14/hour=10/p0007-o000000001234-o000000005678.parquet" {
		t.Errorf("objectKey = %s", k)
	}
	if k := lay.quarantineKey(hour0, 7, 1, 2); k != "archive/quarantine/dt=2026-11-14/p0007-o000000000001-o000000000002.jsonl" {
		t.Errorf("quarantineKey = %s", k)
	}
	if k := lay.progressKey(7); k != "archive/views/_progress/p0007.json" {
		t.Errorf("progressKey = %s", k)
	}
}

func FuzzReadFile(f *testing.F) {
	body, _ := encodeFile(sampleRows(30, 0), 3, 0, 29, EncodeOptions{RowGroupRows: 8})
	f.Add(body)
	f.Add([]byte("PAR1"))
	f.Add(body[:len(body)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = readFile(b, func(Row) error { return nil }) // must not panic or hang
	})
}

func FuzzParseObjectName(f *testing.F) {
	f.Add("archive/views/dt=2026-11-14/hour=10/p0007-o000000001234-o000000005678.parquet")
	f.Fuzz(func(t *testing.T, key string) {
		sp, err := parseObjectName(key)
		if err != nil {
			return
		}
		if sp.First > sp.Last || sp.Partition < 0 {
			t.Fatalf("accepted %q as %+v", key, sp)
		}
	})
}

// rowV1 is Row as written before the trending-topics columns: files of that shape must read
// with UserID "" and AccountAgeDays nil.
type rowV1 struct {
	ItemID    string `parquet:"item_id,dict"`
	Count     uint32 `parquet:"count"`
	TS        int64  `parquet:"ts,timestamp(millisecond),delta"`
	Region    string `parquet:"region,dict"`
	Partition int32  `parquet:"kafka_partition"`
	Offset    int64  `parquet:"kafka_offset,delta"`
	IngestTS  int64  `parquet:"ingest_ts,timestamp(millisecond),delta"`
}

func TestTopicsColumns(t *testing.T) {
	t.Run("old files read as absent", func(t *testing.T) {
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[rowV1](&buf)
		if _, err := w.Write([]rowV1{{ItemID: "V1", Count: 2, TS: 1794650712000, Region: "eu", Partition: 3, Offset: 9, IngestTS: 1794650712001}}); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		var got []Row
		if err := readFile(buf.Bytes(), func(r Row) error { got = append(got, r); return nil }); err != nil {
			t.Fatal(err)
		}
		want := Row{ItemID: "V1", Count: 2, TS: 1794650712000, Region: "eu", Partition: 3, Offset: 9, IngestTS: 1794650712001}
		if len(got) != 1 || got[0] != want {
			t.Fatalf("read %+v, want %+v", got, want)
		}
	})
	t.Run("round trip", func(t *testing.T) {
		rows := sampleRows(40, 0)
		for i := range rows {
			if i%4 == 1 {
				age := int32(i % 3) // 0 is a real age: created today
				rows[i].AccountAgeDays = &age
			}
		}
		body, err := encodeFile(slices.Clone(rows), 3, 0, 39, DefaultEncodeOptions())
		if err != nil {
			t.Fatal(err)
		}
		byOffset := map[int64]Row{}
		if err := readFile(body, func(r Row) error { byOffset[r.Offset] = r; return nil }); err != nil {
			t.Fatal(err)
		}
		for _, want := range rows {
			got := byOffset[want.Offset]
			if got.UserID != want.UserID || (got.AccountAgeDays == nil) != (want.AccountAgeDays == nil) ||
				(got.AccountAgeDays != nil && *got.AccountAgeDays != *want.AccountAgeDays) {
				t.Fatalf("offset %d: user %q age %v, want %q %v", want.Offset, got.UserID, got.AccountAgeDays, want.UserID, want.AccountAgeDays)
			}
		}
	})
}
