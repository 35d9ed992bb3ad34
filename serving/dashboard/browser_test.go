package dashboard_test

import (
	"context"
	"flag"
	"fmt"
	"html"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"trending/model"
	"trending/model/windowset"
	"trending/serving/api"
	"trending/serving/api/demo"
	boltstore "trending/serving/store/bolt"
)

var update = flag.Bool("update", false, "save the dashboard screenshot to testdata/screenshot.png")

// EnvBrowser makes the browser test mandatory: with it set to 1, a missing chromium fails the
// test instead of skipping it. CI installs chromium with: apt-get install -y chromium
const EnvBrowser = "TRENDING_IT_BROWSER"

// chromium finds the browser, or skips (or fails, when EnvBrowser=1) saying how to install it.
func chromium(t *testing.T) string {
	t.Helper()
	required := os.Getenv(EnvBrowser) == "1"
	if testing.Short() && !required {
		t.Skip("browser test: skipped in -short mode")
	}
	for _, p := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if path, err := exec.LookPath(p); err == nil {
			return path
		}
	}
	if required {
		t.Fatalf("%s=1 but chromium is not installed: apt-get install -y chromium", EnvBrowser)
	}
	t.Skipf("browser test: chromium not found; apt-get install -y chromium (or set %s=1 to require it)", EnvBrowser)
	return ""
}

// TestDashboardRenders starts the API on a store holding the demo lists, loads the dashboard
// in headless chromium, and checks that every live list and the calendar browser rendered
// with data. It saves a screenshot: testdata/screenshot.png with -update, else into
// $TRENDING_ARTIFACTS (when set) or the test's temporary directory.
func TestDashboardRenders(t *testing.T) {
	bin := chromium(t)
	dir := t.TempDir()
	st, err := boltstore.Open(filepath.Join(dir, "serving.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now()
	if err := demo.Seed(context.Background(), st, now); err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(api.DefaultConfig(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Handle(demo.ThumbnailRoute()); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Headless chromium's virtual time stands still while a request is open, so a stream
	// here ends after its first event, and tells the browser to reconnect only after the
	// budget (--virtual-time-budget) is spent; the page must still show the pushed lists.
	hs := srv.HTTPServer()
	hs.Handler = oneEventStreams(hs.Handler)
	ctx, cancel := context.WithCancel(context.Background())
	cacheDone := make(chan struct{})
	go func() { defer close(cacheDone); srv.Cache().Run(ctx) }()
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	defer func() {
		cancel()
		<-cacheDone
		if err := hs.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-done; err != http.ErrServerClosed {
			t.Errorf("serve: %v", err)
		}
	}()
	url := "http://" + ln.Addr().String() + "/"
	waitReady(t, "http://"+ln.Addr().String()+"/readyz")

	run := func(args ...string) []byte {
		t.Helper()
		base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
			"--disable-background-networking", "--disable-component-update", "--disable-sync",
			"--user-data-dir=" + t.TempDir(), "--window-size=1400,900", "--virtual-time-budget=4000"}
		cctx, ccancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer ccancel()
		cmd := exec.CommandContext(cctx, bin, append(append(base, args...), url)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, tail(stderr.String()))
		}
		return out
	}

	dom := string(run("--dump-dom"))
	lists := demo.Lists(now)
	for _, l := range lists[:4] { // the live lists
		for _, it := range l.Items[:3] {
			if !strings.Contains(dom, `data-item="`+it.ItemID+`"`) {
				t.Errorf("live %s list: item %s not rendered", l.Window, it.ItemID)
			}
			if thumb := `class="thumb" src="` + html.EscapeString(it.Thumbnail) + `"`; !strings.Contains(dom, thumb) {
				t.Errorf("live %s list: item %s has no thumbnail %s", l.Window, it.ItemID, thumb)
			}
		}
		if !strings.Contains(dom, `data-window="`+l.Window+`"`) {
			t.Errorf("no card for the live %s list", l.Window)
		}
		// Pushed over /v1/trending/stream, with its freshness beside it.
		if card := liveCardOf(dom, l.Window); !strings.Contains(card, `data-via="stream"`) || !strings.Contains(card, " old</span>") ||
			!strings.Contains(card, "· pushed") {
			t.Errorf("live %s card is not streamed or shows no freshness:\n%s", l.Window, card)
		}
	}
	for _, want := range []string{`class="badge badge-exact"`, `class="badge badge-live"`, `class="badge badge-provisional"`, "at most +", "partial: partitions 7",
		`data-status="exact"`, `data-status="provisional"`, `data-status="live"`, `data-status="missing"`, `class="kv"`, `class="pill pill-ok"`} {
		if !strings.Contains(dom, want) {
			t.Errorf("dashboard DOM lacks %q", want)
		}
	}
	// The reconciliation panel: per level the newest reconciled window's recall@K, and its
	// max error against the bound where the speed list stated one (the months' sketches).
	newest := map[string]model.List{}
	for _, l := range lists {
		if l.Reconciliation != nil && !l.Start.IsZero() && l.Start.After(newest[l.Window].Start) {
			newest[l.Window] = l
		}
	}
	for _, level := range windowset.Default().Calendar() {
		l, ok := newest[string(level)]
		if !ok {
			t.Fatalf("the demo has no reconciled %s window", level)
		}
		within := "none"
		if l.Reconciliation.SpeedErrorBound != nil {
			within = "true"
		}
		card := cardOf(dom, `data-level="`+string(level)+`"`)
		for _, want := range []string{`data-within="` + within + `"`,
			fmt.Sprintf(`class="big num recon-recall">%.1f%%<`, l.Reconciliation.RecallAtK*100)} {
			if !strings.Contains(card, want) {
				t.Errorf("reconciliation card of %s lacks %q:\n%s", level, want, card)
			}
		}
	}
	if card := cardOf(dom, `data-level="month"`); !strings.Contains(card, "within bound") || !strings.Contains(card, `class="meter"`) ||
		!strings.Contains(card, fmt.Sprintf("%s / %dk", thousands(newest["month"].Reconciliation.MaxAbsError), int(math.Ceil(newest["month"].Reconciliation.SpeedErrorBound.MaxOvercount)/1000))) {
		t.Errorf("month reconciliation card lacks the error against the bound:\n%s", card)
	}
	if card := cardOf(dom, `data-level="hour"`); !strings.Contains(card, "no bound") {
		t.Errorf("hour reconciliation card lacks \"no bound\":\n%s", card)
	}
	if !strings.Contains(dom, `id="group-bar" class="group-bar" hidden=""`) {
		t.Error("the group picker shows without lists per group configured")
	}
	if strings.Contains(dom, "Unavailable") || strings.Contains(dom, "no list") {
		t.Errorf("dashboard shows an unavailable list:\n%s", tail(dom))
	}

	shot := filepath.Join(t.TempDir(), "screenshot.png")
	if a := os.Getenv("TRENDING_ARTIFACTS"); a != "" {
		if err := os.MkdirAll(a, 0o755); err == nil {
			shot = filepath.Join(a, "dashboard.png")
		}
	}
	if *update {
		shot, _ = filepath.Abs(filepath.Join("testdata", "screenshot.png"))
	}
	run("--screenshot=" + shot)
	fi, err := os.Stat(shot)
	if err != nil || fi.Size() < 20_000 {
		t.Fatalf("screenshot %s: %v (size %v): expected a rendered page", shot, err, fi)
	}
	t.Logf("screenshot: %s (%d bytes)", shot, fi.Size())
}

// oneEventStreams ends every GET /v1/trending/stream after its first event, with a retry time
// of an hour (EventSource's reconnection delay), and passes every other request through.
func oneEventStreams(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/trending/stream" {
			h.ServeHTTP(w, r)
			return
		}
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		h.ServeHTTP(&firstEvent{ResponseWriter: w, cancel: cancel}, r.WithContext(ctx))
	})
}

// firstEvent writes the retry field after the header and cancels the request once an event
// ("id: ...\ndata: ...\n\n", written in three parts) is through.
type firstEvent struct {
	http.ResponseWriter
	cancel context.CancelFunc
	data   bool
}

func (w *firstEvent) WriteHeader(code int) {
	w.ResponseWriter.WriteHeader(code)
	if code == http.StatusOK {
		w.ResponseWriter.Write([]byte("retry: 3600000\n\n"))
	}
}

func (w *firstEvent) Write(p []byte) (int, error) {
	if strings.HasPrefix(string(p), "id: ") {
		w.data = true
	}
	n, err := w.ResponseWriter.Write(p)
	if w.data && string(p) == "\n\n" {
		w.cancel()
	}
	return n, err
}

// Unwrap lets http.ResponseController flush and set deadlines through the wrapper.
func (w *firstEvent) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// liveCardOf returns the opening tag and head of the live card of window in dom.
func liveCardOf(dom, window string) string {
	i := strings.Index(dom, `<article class="card" data-window="`+window+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(dom[i:], `class="card-meta"`)
	if j < 0 {
		return dom[i:]
	}
	return dom[i : i+j]
}

// cardOf returns the reconciliation card element in dom whose opening tag holds attr.
func cardOf(dom, attr string) string {
	i := strings.Index(dom, `<article class="recon-card" `+attr)
	if i < 0 {
		return ""
	}
	j := strings.Index(dom[i:], "</article>")
	if j < 0 {
		return dom[i:]
	}
	return dom[i : i+j]
}

// thousands formats n as the dashboard's full() does: 22000 -> 22,000.
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func waitReady(t *testing.T, url string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s never became ready", url)
}

func tail(s string) string {
	if len(s) > 2000 {
		return "..." + s[len(s)-2000:]
	}
	return s
}

// TestDashboardRendersDecayed: a deployment with a decayed window ("now") shows it as a live
// card titled by its half-life, its items ranked by score with the score shown (one decimal
// under 100), and the decay explained where other cards state their counts.
func TestDashboardRendersDecayed(t *testing.T) {
	bin := chromium(t)
	st, err := boltstore.Open(filepath.Join(t.TempDir(), "serving.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Now().UTC()
	if err := demo.Seed(context.Background(), st, now); err != nil {
		t.Fatal(err)
	}
	at := now.Add(-3 * time.Second)
	dl := model.List{Window: "now", AsOf: at, Version: at.UnixMilli(), Source: model.SourceSpeed, Status: model.StatusLive, ComputedAt: at,
		HalfLifeSeconds: 3600, Items: []model.Item{
			{Rank: 1, ItemID: "viral-1", Views: 1234, DecayedScore: 1233.5, Title: "Burst"},
			{Rank: 2, ItemID: "steady-7", Views: 87, DecayedScore: 86.625},
		}}
	if err := st.Put(context.Background(), dl); err != nil {
		t.Fatal(err)
	}
	cfg := api.DefaultConfig()
	if cfg.Windows, err = windowset.Parse(windowset.DefaultSpec + ",now=decayed:1h"); err != nil {
		t.Fatal(err)
	}
	srv, err := api.New(cfg, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer()
	hs.Handler = oneEventStreams(hs.Handler)
	ctx, cancel := context.WithCancel(context.Background())
	cacheDone := make(chan struct{})
	go func() { defer close(cacheDone); srv.Cache().Run(ctx) }()
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	defer func() {
		cancel()
		<-cacheDone
		_ = hs.Shutdown(context.Background())
		<-done
	}()
	url := "http://" + ln.Addr().String() + "/"
	waitReady(t, "http://"+ln.Addr().String()+"/readyz")
	cctx, ccancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer ccancel()
	cmd := exec.CommandContext(cctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+t.TempDir(),
		"--window-size=1400,900", "--virtual-time-budget=4000", "--dump-dom", url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, tail(stderr.String()))
	}
	dom := string(out)
	i := strings.Index(dom, `<article class="card decayed" data-window="now"`)
	if i < 0 {
		t.Fatalf("no decayed card for now:\n%s", tail(dom))
	}
	card := dom[i:]
	if j := strings.Index(card, "</article>"); j > 0 {
		card = card[:j]
	}
	for _, want := range []string{"Trending now (half-life 1h)", "each view counts ½ per 60 min of age, no window edge",
		`data-item="viral-1"`, `class="score num" title="score 1233.50: worth 1,234 views now">1.2k<`,
		`class="score num" title="score 86.63: worth 87 views now">86.6<`, `aria-label="top 2 by score"`} {
		if !strings.Contains(card, want) {
			t.Errorf("decayed card lacks %q:\n%s", want, card)
		}
	}
}
