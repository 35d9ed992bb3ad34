package ingest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/segmentio/kafka-go"

	"trending/internal/eventlog"
	"trending/internal/itest"
	"trending/internal/setting"
	"trending/model/event"
	"trending/model/salt"
	"trending/serving/ingest"
)

type memWriter struct {
	mu   sync.Mutex
	msgs []kafka.Message
	fail bool
}

func (m *memWriter) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail {
		return errors.New("broker down")
	}
	m.msgs = append(m.msgs, msgs...)
	return nil
}

func (m *memWriter) total(t *testing.T) map[string]uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]uint64{}
	for _, msg := range m.msgs {
		ev, err := event.Decode(msg.Value)
		if err != nil {
			t.Fatalf("published an invalid event %s: %v", msg.Value, err)
		}
		if string(msg.Key) != ev.ItemID {
			t.Fatalf("key %s for item %s", msg.Key, ev.ItemID)
		}
		out[ev.ItemID] += uint64(ev.Count)
	}
	return out
}

// config is DefaultConfig with mod applied.
func config(mod func(*ingest.Config)) ingest.Config {
	c := ingest.DefaultConfig()
	if mod != nil {
		mod(&c)
	}
	return c
}

func post(h http.Handler, body string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/events", strings.NewReader(body)))
	return rec
}

func TestAcceptAndPreSum(t *testing.T) {
	w := &memWriter{}
	in, _ := ingest.New(ingest.DefaultConfig(), w)
	for _, body := range []string{
		`{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12Z"}`,
		`[{"item_id":"V7","count":2,"ts":"2026-11-14T10:05:12.500Z"},{"item_id":"V8","count":1,"ts":1763114712000}]`,
		`{"events":[{"item_id":"V7","count":5,"ts":"2026-11-14T10:05:13Z","region":"eu"}]}`,
	} {
		if rec := post(in, body); rec.Code != http.StatusAccepted {
			t.Fatalf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
	if err := in.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	// V7 at 10:05:12 (3+2) is one pre-summed message; at 10:05:13 (eu) another.
	if len(w.msgs) != 3 {
		t.Fatalf("%d messages, want 3 (pre-summed per item, region and second)", len(w.msgs))
	}
	if got := w.total(t); got["V7"] != 10 || got["V8"] != 1 {
		t.Fatalf("totals %v", got)
	}
}

// TestMentionsPassThrough checks events with a user or an account age are published one by
// one, exactly as decoded: summing two users' mentions would hide the second user from the
// topics dedupe, and summing ages would lose the weight. A failed flush keeps them.
func TestMentionsPassThrough(t *testing.T) {
	w := &memWriter{fail: true}
	in, _ := ingest.New(ingest.DefaultConfig(), w)
	body := `[{"item_id":"#quake","count":1,"ts":"2026-11-14T10:05:12Z","region":"eu","user_id":"u1","account_age_days":2},
		{"item_id":"#quake","count":1,"ts":"2026-11-14T10:05:12Z","region":"eu","user_id":"u1","account_age_days":2},
		{"item_id":"#quake","count":1,"ts":"2026-11-14T10:05:12.400Z","region":"eu","user_id":"u2"},
		{"item_id":"#quake","count":1,"ts":"2026-11-14T10:05:12Z","region":"eu","account_age_days":900},
		{"item_id":"#quake","count":4,"ts":"2026-11-14T10:05:12Z","region":"eu"},
		{"item_id":"#quake","count":6,"ts":"2026-11-14T10:05:12Z","region":"eu"}]`
	if rec := post(in, body); rec.Code != http.StatusAccepted {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if err := in.Flush(context.Background()); err == nil {
		t.Fatal("flush to a failing writer succeeded")
	}
	w.mu.Lock()
	w.fail = false
	w.mu.Unlock()
	if err := in.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	var users []string
	var ages []int32
	summed := 0
	for _, msg := range w.msgs {
		ev, err := event.Decode(msg.Value)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case ev.UserID != "" || ev.HasAccountAge:
			if ev.Count != 1 {
				t.Errorf("a mention was summed: %s", msg.Value)
			}
			users = append(users, ev.UserID)
			ages = append(ages, ev.AccountAgeDays)
		default:
			summed++
			if ev.Count != 10 {
				t.Errorf("anonymous views not pre-summed: %s", msg.Value)
			}
		}
	}
	if want := []string{"u1", "u1", "u2", ""}; strings.Join(users, ",") != strings.Join(want, ",") || summed != 1 {
		t.Fatalf("users %q and %d summed messages, want %q (in order) and 1", users, summed, want)
	}
	if fmt.Sprint(ages) != "[2 2 0 900]" {
		t.Fatalf("ages %v, want [2 2 0 900]", ages)
	}
	if got := w.total(t); got["#quake"] != 14 {
		t.Fatalf("total %v, want 14", got)
	}
}

func TestRejections(t *testing.T) {
	in, _ := ingest.New(config(func(c *ingest.Config) { c.MaxBodyBytes, c.MaxEvents = 300, 2 }), &memWriter{})
	for _, c := range []struct {
		body, want string
		code       int
	}{
		{``, "empty body", 400},
		{`{"item_id":"V7","count":0,"ts":"2026-11-14T10:05:12Z"}`, "count", 400},
		{`[{"item_id":"V7","count":1,"ts":"2026-11-14T10:05:12Z"},{"itemid":"V8","count":1,"ts":"2026-11-14T10:05:12Z"}]`, "events[1]", 400},
		{`[]`, "empty batch", 400},
		{`"hello"`, "want one event", 400},
		{`[{"item_id":"a","count":1,"ts":1763114712000},{"item_id":"b","count":1,"ts":1763114712000},{"item_id":"c","count":1,"ts":1763114712000}]`, "at most 2", 413},
		{strings.Repeat(" ", 400) + `{}`, "at most 300 bytes", 413},
	} {
		rec := post(in, c.body)
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.want) || !strings.Contains(rec.Body.String(), `"error"`) {
			t.Errorf("%.40q: %d %s, want %d mentioning %q", c.body, rec.Code, rec.Body, c.code, c.want)
		}
	}
	rec := httptest.NewRecorder()
	in.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/events", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", rec.Code)
	}
}

// A failed flush keeps the sums; the next one publishes them: nothing accepted is lost.
func TestFlushRetriesAndShutdown(t *testing.T) {
	w := &memWriter{fail: true}
	in, _ := ingest.New(config(func(c *ingest.Config) { c.FlushEvery = 10 * time.Millisecond }), w)
	post(in, `{"item_id":"V1","count":4,"ts":"2026-11-14T10:05:12Z"}`)
	if err := in.Flush(context.Background()); err == nil {
		t.Fatal("flush to a failing writer must fail")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- in.Run(ctx) }()
	post(in, `{"item_id":"V1","count":6,"ts":"2026-11-14T10:05:12Z"}`)
	w.mu.Lock()
	w.fail = false
	w.mu.Unlock()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := w.total(t); got["V1"] != 10 {
		t.Fatalf("after recovery and shutdown: %v, want V1=10", got)
	}
}

// TestStopRefusesThenFlushes: concurrent posts while Run stops; every event answered 202 is
// written, every later request is refused with 503, none is half taken.
func TestStopRefusesThenFlushes(t *testing.T) {
	w := &memWriter{}
	in, err := ingest.New(config(func(c *ingest.Config) { c.FlushEvery = time.Hour }), w)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	var accepted sync.WaitGroup
	var mu sync.Mutex
	var ok, no int
	for g := 0; g < 4; g++ {
		accepted.Add(1)
		go func() {
			defer accepted.Done()
			for i := 0; ; i++ {
				rec := post(in, fmt.Sprintf(`{"item_id":"g%d","count":1,"ts":"2026-12-01T10:00:00Z"}`, g))
				mu.Lock()
				switch rec.Code {
				case http.StatusAccepted:
					ok++
				case http.StatusServiceUnavailable:
					no++
					if rec.Header().Get("Retry-After") == "" {
						t.Error("503 without Retry-After")
					}
					mu.Unlock()
					return
				default:
					t.Errorf("status %d: %s", rec.Code, rec.Body)
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	accepted.Wait()
	var sum uint64
	for _, n := range w.total(t) {
		sum += n
	}
	if no != 4 || sum != uint64(ok) {
		t.Fatalf("%d answered 202, %d written to Kafka; %d goroutines refused (want 4)", ok, sum, no)
	}
}

func TestLargeSumsSplit(t *testing.T) {
	w := &memWriter{}
	in, _ := ingest.New(ingest.DefaultConfig(), w)
	for i := 0; i < 3; i++ {
		post(in, `{"item_id":"V1","count":1000000,"ts":"2026-11-14T10:05:12Z"}`)
	}
	in.Flush(context.Background())
	if len(w.msgs) != 3 || w.total(t)["V1"] != 3_000_000 {
		t.Fatalf("%d messages, total %v", len(w.msgs), w.total(t))
	}
}

func TestKafka(t *testing.T) {
	addr := itest.Kafka(t)
	ctx := itest.Context(t, 60*time.Second)
	topic := itest.Name(t, "ingest")
	if _, err := eventlog.EnsureTopics(ctx, []string{addr}, eventlog.Spec{Name: topic, Partitions: 2}); err != nil {
		t.Fatal(err)
	}
	kw := eventlog.NewWriter([]string{addr}, topic)
	defer kw.Close()
	in, _ := ingest.New(ingest.DefaultConfig(), kw)
	for i := 0; i < 20; i++ {
		post(in, fmt.Sprintf(`{"item_id":"V%d","count":%d,"ts":"2026-11-14T10:05:12Z"}`, i%4, i+1))
	}
	if err := in.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for p := 0; p < 2; p++ {
		r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: topic, Partition: p, MaxWait: 100 * time.Millisecond})
		last, _ := kafka.DialLeader(ctx, "tcp", addr, topic, p)
		end, _ := last.ReadLastOffset()
		last.Close()
		for off := int64(0); off < end; off++ {
			m, err := r.FetchMessage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			ev, _ := event.Decode(m.Value)
			got[ev.ItemID] += uint64(ev.Count)
		}
		r.Close()
	}
	want := map[string]uint64{"V0": 45, "V1": 50, "V2": 55, "V3": 60}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("in Kafka %v, want %v", got, want)
	}
}

// TestFullRefusesWithRetryAfter: while Kafka is away, accepted events wait in memory up to
// MaxPendingBytes; a request that would pass it is refused whole with 503, Retry-After and
// a JSON error, counted in a metric, and nothing answered 202 is lost once Kafka is back.
func TestFullRefusesWithRetryAfter(t *testing.T) {
	w := &memWriter{fail: true}
	reg := prometheus.NewRegistry()
	in, err := ingest.New(config(func(c *ingest.Config) { c.MaxPendingBytes, c.Registry = 4000, reg }), w)
	if err != nil {
		t.Fatal(err)
	}
	accepted := map[string]uint64{}
	refused := 0
	for i := range 100 {
		item := fmt.Sprintf("V%d", i)
		rec := post(in, fmt.Sprintf(`[{"item_id":%q,"count":2,"ts":"2026-11-14T10:05:12Z"},{"item_id":%q,"count":1,"ts":"2026-11-14T10:05:13Z"}]`, item, item))
		switch rec.Code {
		case http.StatusAccepted:
			if refused > 0 {
				t.Fatalf("request %d accepted after the buffer was full and nothing was flushed", i)
			}
			accepted[item] += 3
		case http.StatusServiceUnavailable:
			refused++
			var body struct{ Error, Detail string }
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error != "overloaded" || rec.Header().Get("Retry-After") == "" {
				t.Fatalf("refusal: %d %q %v, Retry-After %q", rec.Code, rec.Body, err, rec.Header().Get("Retry-After"))
			}
		default:
			t.Fatalf("request %d: %d %s", i, rec.Code, rec.Body)
		}
	}
	if len(accepted) == 0 || refused == 0 {
		t.Fatalf("%d accepted, %d refused: want the buffer to fill", len(accepted), refused)
	}
	if got := counterValue(t, reg, "trending_ingest_refused_full_total"); got != float64(refused) {
		t.Fatalf("refused_full_total %v, want %d", got, refused)
	}
	// A failed flush keeps everything; once Kafka is back it is all written, and the
	// buffer takes events again.
	if err := in.Flush(context.Background()); err == nil {
		t.Fatal("flush to a failing writer must fail")
	}
	w.mu.Lock()
	w.fail = false
	w.mu.Unlock()
	if err := in.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := w.total(t); fmt.Sprint(got) != fmt.Sprint(accepted) {
		t.Fatalf("written %v, accepted %v", got, accepted)
	}
	if rec := post(in, `{"item_id":"again","count":1,"ts":"2026-11-14T10:05:12Z"}`); rec.Code != http.StatusAccepted {
		t.Fatalf("after the flush: %d %s", rec.Code, rec.Body)
	}
}

func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// TestConfigZeroMeansZero: New takes a Config as it is. DefaultConfig is accepted; a zero
// bound that cannot work is refused by field instead of replaced by its default; MaxPending
// 0 is honoured: every request is written to Kafka before it is answered.
func TestConfigZeroMeansZero(t *testing.T) {
	w := &memWriter{}
	in, err := ingest.New(ingest.DefaultConfig(), w)
	if err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	if rec := post(in, `{"item_id":"V1","count":1,"ts":"2026-11-14T10:05:12Z"}`); rec.Code != http.StatusAccepted || len(w.msgs) != 0 {
		t.Fatalf("default MaxPending: %d, %d messages written before any flush; want 202 and 0", rec.Code, len(w.msgs))
	}
	for field, mod := range map[string]func(*ingest.Config){
		"MaxBodyBytes":    func(c *ingest.Config) { c.MaxBodyBytes = 0 },
		"MaxEvents":       func(c *ingest.Config) { c.MaxEvents = 0 },
		"FlushEvery":      func(c *ingest.Config) { c.FlushEvery = 0 },
		"MaxPendingBytes": func(c *ingest.Config) { c.MaxPendingBytes = 0 },
		"MaxPending":      func(c *ingest.Config) { c.MaxPending = -1 },
		"MaxFuture":       func(c *ingest.Config) { c.MaxFuture = -time.Second },
	} {
		if _, err := ingest.New(config(mod), &memWriter{}); !errors.Is(err, setting.ErrConfig) || !strings.Contains(err.Error(), field+":") {
			t.Errorf("%s: New error %v, want a setting error naming it", field, err)
		}
	}
	w = &memWriter{}
	in, err = ingest.New(config(func(c *ingest.Config) { c.MaxPending = 0 }), w)
	if err != nil {
		t.Fatal(err)
	}
	if rec := post(in, `{"item_id":"V1","count":2,"ts":"2026-11-14T10:05:12Z"}`); rec.Code != http.StatusAccepted {
		t.Fatalf("MaxPending 0: %d %s", rec.Code, rec.Body)
	}
	if got := w.total(t); got["V1"] != 2 {
		t.Fatalf("MaxPending 0: written before the answer %v, want V1=2", got)
	}
}

// TestFutureRefusedAtTheDoor: an event dated over MaxFuture ahead of the server's clock is
// refused with 400 and reason future_ts (the speed layer's DLQ reason for it), and nothing of
// its batch is taken; at the limit it is accepted; MaxFuture 0 turns the check off. A decode
// error carries its reason code too.
func TestFutureRefusedAtTheDoor(t *testing.T) {
	now := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)
	w := &memWriter{}
	in, err := ingest.New(config(func(c *ingest.Config) { c.Now, c.MaxPending = func() time.Time { return now }, 0 }), w)
	if err != nil {
		t.Fatal(err)
	}
	type body struct{ Error, Detail, Reason string }
	for _, c := range []struct {
		body, reason, detail string
		code                 int
	}{
		{`{"item_id":"V1","count":1,"ts":"2026-11-14T11:00:00Z"}`, "future_ts", "ts: event time 2026-11-14T11:00:00Z is 1h0m0s ahead of the server's clock, over the 10m0s allowed", 400},
		{`[{"item_id":"V1","count":1,"ts":"2026-11-14T10:00:00Z"},{"item_id":"V2","count":1,"ts":"2026-11-14T10:10:00.001Z"}]`, "future_ts", "events[1].ts: event time 2026-11-14T10:10:00.001Z is 10m0.001s ahead", 400},
		{`{"item_id":"V1","count":0,"ts":"2026-11-14T10:00:00Z"}`, "bad_count", "count:", 400},
		{`{"item_id":"V1","count":1,"ts":"2026-11-14T10:10:00Z"}`, "", "", 202},
	} {
		rec := post(in, c.body)
		var b body
		_ = json.Unmarshal(rec.Body.Bytes(), &b)
		if rec.Code != c.code || b.Reason != c.reason || !strings.Contains(b.Detail, c.detail) {
			t.Errorf("%.60s: %d %s, want %d reason %q detail %q", c.body, rec.Code, rec.Body, c.code, c.reason, c.detail)
		}
	}
	if got := w.total(t); len(got) != 1 || got["V1"] != 1 {
		t.Errorf("published %v, want only the accepted V1=1", got)
	}
	off, _ := ingest.New(config(func(c *ingest.Config) { c.Now, c.MaxFuture = func() time.Time { return now }, 0 }), &memWriter{})
	if rec := post(off, `{"item_id":"V1","count":1,"ts":"2027-11-14T11:00:00Z"}`); rec.Code != http.StatusAccepted {
		t.Errorf("MaxFuture 0: %d %s, want 202", rec.Code, rec.Body)
	}
}

// TestServerClock: an event without ts takes the server's clock at receipt (one reading per
// request); one with ts keeps it; POST /v1/views is one view of video_id at that clock, with
// position_s checked and not kept, and every bad body a 400 naming the field.
func TestServerClock(t *testing.T) {
	w := &memWriter{}
	at := time.Date(2026, 11, 14, 10, 5, 12, 345_678_000, time.UTC)
	in, err := ingest.New(config(func(c *ingest.Config) { c.Now = func() time.Time { return at } }), w)
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`{"item_id":"V7","count":3}`,
		`[{"item_id":"V8","count":1},{"item_id":"V9","count":1,"ts":"2026-11-13T00:00:00Z"}]`,
	} {
		if rec := post(in, body); rec.Code != http.StatusAccepted {
			t.Fatalf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
	views := in.Views()
	for _, body := range []string{`{"video_id":"V7","position_s":31}`, `{"video_id":"V7"}`, `{"video_id":"V7","position_s":0.5}`} {
		rec := httptest.NewRecorder()
		views.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/views", strings.NewReader(body)))
		if rec.Code != http.StatusAccepted || rec.Body.String() != `{"accepted":1}`+"\n" {
			t.Fatalf("%s: %d %s", body, rec.Code, rec.Body)
		}
	}
	if err := in.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[string]time.Time{}
	counts := map[string]uint64{}
	for _, m := range w.msgs {
		ev, err := event.Decode(m.Value)
		if err != nil {
			t.Fatalf("published %s: %v", m.Value, err)
		}
		got[ev.ItemID], counts[ev.ItemID] = ev.TS, counts[ev.ItemID]+uint64(ev.Count)
	}
	stamped := at.Truncate(time.Second) // pre-summed per second
	if !got["V7"].Equal(stamped) || !got["V8"].Equal(stamped) || !got["V9"].Equal(time.Date(2026, 11, 13, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("event times %v; want V7 and V8 at the server's %v, V9 at its own", got, stamped)
	}
	if counts["V7"] != 3+3 || counts["V8"] != 1 {
		t.Fatalf("counts %v: want V7 3 posted + 3 views", counts)
	}
	for _, c := range []struct{ body, want string }{
		{`{"position_s":31}`, "video_id: is required"},
		{`{"video_id":""}`, "video_id"},
		{`{"video_id":"V7","position_s":-1}`, "position_s"},
		{`{"video_id":"V7","position_s":"31"}`, "position_s"},
		{`{"video_id":"V7","viewer":"me"}`, "viewer"},
		{`{"video_id":7}`, "video_id"},
		{`{"video_id":"V7"}{"video_id":"V8"}`, "one view object"},
		{`[]`, "video_id"},
	} {
		rec := httptest.NewRecorder()
		views.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/views", strings.NewReader(c.body)))
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("%s: %d %s, want 400 mentioning %q", c.body, rec.Code, rec.Body, c.want)
		}
	}
	rec := httptest.NewRecorder()
	views.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/views", nil))
	if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != http.MethodPost {
		t.Errorf("GET /v1/views: %d", rec.Code)
	}
}

// TestSalting: with a Salter, the pre-summed messages of a salted item take its sub-keys
// with the salt header (a configured item, and one detected at the threshold), its event
// unchanged; mentions (events with a user) of a salted item keep their key; an unsalted item
// is keyed by its id.
func TestSalting(t *testing.T) {
	var shared []salt.Entry
	scfg := salt.DefaultConfig()
	scfg.Threshold, scfg.Ways = 10, 2 // a flush writes 8 messages of COLD, 24 of HOT
	s, err := salt.NewSalter(scfg, salt.NewSet(salt.Entry{Item: "CFG", Ways: 4}), func(e salt.Entry) { shared = append(shared, e) })
	if err != nil {
		t.Fatal(err)
	}
	w := &memWriter{}
	in, _ := ingest.New(config(func(c *ingest.Config) { c.Salter = s }), w)
	var body []string
	for sec := range 8 {
		ts := fmt.Sprintf("2026-11-14T10:05:%02dZ", sec)
		body = append(body, `{"item_id":"CFG","count":2,"ts":"`+ts+`"}`, `{"item_id":"COLD","count":1,"ts":"`+ts+`"}`)
		for r := range 3 { // three regions: three pre-summed messages a second
			body = append(body, fmt.Sprintf(`{"item_id":"HOT","count":1,"ts":"%s","region":"r%d"}`, ts, r))
		}
	}
	body = append(body, `{"item_id":"CFG","count":1,"ts":"2026-11-14T10:05:00Z","user_id":"u1"}`)
	if rec := post(in, "["+strings.Join(body, ",")+"]"); rec.Code != http.StatusAccepted {
		t.Fatalf("%d %s", rec.Code, rec.Body)
	}
	if err := in.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	keys := map[string]map[string]bool{}
	views := map[string]uint64{}
	for _, m := range w.msgs {
		ev, err := event.Decode(m.Value)
		if err != nil {
			t.Fatal(err)
		}
		views[ev.ItemID] += uint64(ev.Count)
		if keys[ev.ItemID] == nil {
			keys[ev.ItemID] = map[string]bool{}
		}
		keys[ev.ItemID][string(m.Key)] = true
		salted := len(m.Headers) == 1 && m.Headers[0].Key == salt.Header
		switch {
		case ev.UserID != "" && (salted || string(m.Key) != "CFG"):
			t.Fatalf("a mention was salted: key %s headers %v", m.Key, m.Headers)
		case ev.ItemID == "COLD" && (salted || string(m.Key) != "COLD"):
			t.Fatalf("an unsalted item was keyed %s with headers %v", m.Key, m.Headers)
		case ev.ItemID == "CFG" && ev.UserID == "" && !salted:
			t.Fatalf("a configured item's message was not salted: key %s", m.Key)
		case salted:
			i, _, err := salt.ParseHeader(m.Headers[0].Value)
			if err != nil || string(m.Key) != salt.Key(ev.ItemID, i) {
				t.Fatalf("key %s header %s (%v)", m.Key, m.Headers[0].Value, err)
			}
		}
	}
	if len(keys["CFG"]) != 4 || len(keys["HOT"]) != 2 || views["CFG"] != 17 || views["HOT"] != 24 || views["COLD"] != 8 {
		t.Fatalf("keys %v views %v: want CFG over 4 sub-keys, HOT over 2, every view kept", keys, views)
	}
	if len(shared) != 1 || shared[0].Item != "HOT" || shared[0].Ways != 2 {
		t.Fatalf("shared %v: want HOT detected once", shared)
	}
}

// errWriter fails every write with err while err is set.
type errWriter struct {
	mu  sync.Mutex
	err error
	n   int
}

func (w *errWriter) WriteMessages(_ context.Context, msgs ...kafka.Message) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.n += len(msgs)
	return nil
}

func (w *errWriter) set(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
}

func (w *errWriter) written() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// TestRunRidesOutKafka: while the writes fail with a retryable error the flusher keeps the
// events and its Kafka state says unreachable (what /readyz shows); when they succeed again
// the events are written and the state is up. An authorization failure ends Run with
// eventlog.ErrUnrecoverable instead of retrying forever.
func TestRunRidesOutKafka(t *testing.T) {
	w := &errWriter{err: fmt.Errorf("dial: %w", syscall.ECONNREFUSED)}
	in, err := ingest.New(config(func(c *ingest.Config) { c.FlushEvery = 10 * time.Millisecond }), w)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- in.Run(ctx) }()
	if rec := post(in, `{"item_id":"V7","count":3,"ts":"2026-11-14T10:05:12Z"}`); rec.Code != http.StatusAccepted {
		t.Fatalf("POST while Kafka is away: %d %s, want 202 (buffered)", rec.Code, rec.Body)
	}
	deadline := time.Now().Add(5 * time.Second)
	for in.Kafka().Up() {
		if time.Now().After(deadline) {
			t.Fatal("the ingest still says Kafka is up after failed flushes")
		}
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // several failed flushes
	select {
	case err := <-done:
		t.Fatalf("Run returned during the outage: %v", err)
	default:
	}
	w.set(nil)
	for w.written() == 0 || !in.Kafka().Up() {
		if time.Now().After(deadline) {
			t.Fatalf("after the outage: %d written, up %v", w.written(), in.Kafka().Up())
		}
		time.Sleep(5 * time.Millisecond)
	}
	w.set(kafka.TopicAuthorizationFailed)
	post(in, `{"item_id":"V8","count":1,"ts":"2026-11-14T10:05:12Z"}`)
	select {
	case err := <-done:
		if !errors.Is(err, eventlog.ErrUnrecoverable) {
			t.Fatalf("Run after an authorization failure: %v, want ErrUnrecoverable", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run kept retrying an authorization failure")
	}
	cancel()
}
