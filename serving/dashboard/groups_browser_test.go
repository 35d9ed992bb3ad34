package dashboard_test

import (
	"context"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"trending/model"
	"trending/model/windowset"
	"trending/serving/api"
	"trending/serving/api/demo"
	boltstore "trending/serving/store/bolt"
)

// TestDashboardGroupPicker: with lists per region configured, the dashboard offers a picker of
// every region and each configured one; opened at #region=eu it shows eu's live lists
// (pushed over the stream of region=eu) and eu's calendar windows, titled with the region.
func TestDashboardGroupPicker(t *testing.T) {
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
	// eu's lists: the demo's, with eu's own items. Every live list exists: headless
	// chromium's virtual time stands still while a stream waits for a list not published yet.
	var eu []model.List
	for _, l := range demo.Lists(now) {
		l.Group = "eu"
		for i := range l.Items {
			l.Items[i].ItemID = "EU-" + l.Items[i].ItemID
		}
		eu = append(eu, l)
		if err := st.Put(context.Background(), l); err != nil {
			t.Fatal(err)
		}
	}
	cfg := api.DefaultConfig()
	cfg.Windows.Groups = windowset.Groups{By: windowset.ByRegion, Values: []string{"eu", "us"}}
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
		if err := <-done; err != http.ErrServerClosed {
			t.Errorf("serve: %v", err)
		}
	}()
	base := "http://" + ln.Addr().String()
	waitReady(t, base+"/readyz")

	cctx, ccancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer ccancel()
	cmd := exec.CommandContext(cctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+t.TempDir(),
		"--window-size=1400,900", "--virtual-time-budget=4000", "--dump-dom", base+"/#region=eu")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, tail(stderr.String()))
	}
	dom := string(out)
	for _, want := range []string{`<body data-group="eu">`, `aria-selected="false">every region</button>`,
		`aria-selected="true">eu</button>`, `aria-selected="false">us</button>`, `<span class="card-title">Last hour · eu</span>`,
		`id="group-any" class="group-any" hidden=""`} { // a list of values: no field for any value
		if !strings.Contains(dom, want) {
			t.Errorf("dashboard DOM lacks %q", want)
		}
	}
	liveHour := eu[0]
	if liveHour.Window != "hour" || !liveHour.Start.IsZero() {
		t.Fatalf("the first eu list is %s", liveHour.Key())
	}
	for _, it := range liveHour.Items[:3] {
		if !strings.Contains(dom, `data-item="`+it.ItemID+`"`) {
			t.Errorf("eu's live hour: item %s not rendered", it.ItemID)
		}
	}
	if card := liveCardOf(dom, "hour"); !strings.Contains(card, `data-via="stream"`) {
		t.Errorf("eu's live hour is not pushed over the stream:\n%s", card)
	}
	if strings.Contains(dom, `data-item="`+demo.Lists(now)[0].Items[0].ItemID+`"`) {
		t.Error("the list of every item is shown with region eu picked")
	}
	// The calendar browser shows eu's windows: its detail names the region.
	if !strings.Contains(dom, "· eu</h3>") || !strings.Contains(dom, `data-status="exact"`) {
		t.Errorf("eu's calendar windows not shown:\n%s", tail(dom))
	}
}
