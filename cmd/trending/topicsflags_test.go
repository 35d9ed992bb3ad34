package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"trending/model/event"
	"trending/speed/topics"
)

func TestTopicsFlags(t *testing.T) {
	parse := func(args ...string) (*topics.Config, error) {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		tf := addTopicsFlags(fs, true, 1<<14)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return tf.config()
	}
	cfg, err := parse()
	if cfg != nil || err != nil {
		t.Fatalf("no --topics: %+v, %v; want off", cfg, err)
	}
	cfg, err = parse("--topics", "eu, us,world,eu", "--topics-world-score", "surge")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(cfg.Regions) != "[eu us]" || cfg.Width != 1<<14 || cfg.BaselineWidth != 1<<14 {
		t.Fatalf("regions %v widths %d/%d, want [eu us] (world is always there, duplicates once) and the hours as wide as the minutes", cfg.Regions, cfg.Width, cfg.BaselineWidth)
	}
	if got := apiLists(cfg); fmt.Sprint(got) != "map[eu:surge us:surge world:surge]" {
		t.Fatalf("api lists %v", got)
	}
	if cfg, _ := parse("--topics", "world"); cfg == nil || len(cfg.Regions) != 0 || apiLists(cfg)["world"] != "volume" {
		t.Fatalf("--topics world: %+v, want the worldwide volume list only", cfg)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--topics", "eu", "--topics-score", "hot"}, "--topics-score"},
		{[]string{"--blocklist", "x.txt"}, "--blocklist needs --topics"},
		{[]string{"--topics", "eu,e\x01u"}, "control character"},
	} {
		_, err := parse(c.args...)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want a usage error with %q", c.args, err, c.want)
		}
	}
	if _, err := runTrending(t, "serve", "--listen", "127.0.0.1:0", "--topics", "eu", "--topics-score", "hot"); err == nil || !strings.Contains(err.Error(), "--topics-score") {
		t.Errorf("serve with a bad score: %v", err)
	}
}

// TestUpTopics runs `trending up --topics eu` in process with no load, posts mentions to
// POST /v1/events, and reads them back at GET /v1/topics: a never-seen topic is held, the
// review endpoint approves it, and it is listed in eu and worldwide, one duplicate user
// counted once.
func TestUpTopics(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the whole pipeline")
	}
	addr := freeAddr(t)
	startInProcess(t, "up", "--data", filepath.Join(t.TempDir(), "data"), "--listen", addr, "--no-load", "--backfill", "0",
		"--publish-every", "200ms", "--batch-every", "1h", "--log-format", "json", "--topics", "eu,us")
	base := "http://" + addr
	wait := func(what string, ok func() (bool, string)) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		last := ""
		for time.Now().Before(deadline) {
			var done bool
			if done, last = ok(); done {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s: never; last %s", what, last)
	}
	call := func(method, path string, body []byte) (int, string) {
		req, _ := http.NewRequest(method, base+path, bytes.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	wait("the API up", func() (bool, string) { c, b := call("GET", "/readyz", nil); return c == 200, b })

	ts := time.Now().UTC().Add(-time.Minute)
	var evs []event.Event
	for i := range 320 {
		evs = append(evs, event.Event{ItemID: "#eclipse", Count: 1, TS: ts, Region: "eu", UserID: fmt.Sprintf("u%d", i), AccountAgeDays: 400, HasAccountAge: true})
	}
	for range 50 {
		evs = append(evs, event.Event{ItemID: "#eclipse", Count: 1, TS: ts, Region: "eu", UserID: "u0"})
	}
	body, _ := json.Marshal(evs)
	if c, b := call("POST", "/v1/events", body); c != http.StatusAccepted {
		t.Fatalf("POST /v1/events: %d %s", c, b)
	}
	wait("#eclipse held for review", func() (bool, string) {
		c, b := call("GET", "/v1/topics/review", nil)
		return c == 200 && strings.Contains(b, `"#eclipse"`), b
	})
	if c, b := call("POST", "/v1/topics/review", []byte(`{"topic":"#eclipse","decision":"approve","by":"test"}`)); c != 200 {
		t.Fatalf("approve: %d %s", c, b)
	}
	for _, region := range []string{"eu", "world"} {
		wait("#eclipse listed in "+region, func() (bool, string) {
			c, b := call("GET", "/v1/topics?region="+region, nil)
			var l struct {
				Items []struct {
					ItemID string  `json:"item_id"`
					Views  uint64  `json:"views"`
					Score  float64 `json:"score"`
				} `json:"items"`
			}
			if c != 200 || json.Unmarshal([]byte(b), &l) != nil || len(l.Items) == 0 {
				return false, fmt.Sprintf("%d %s", c, b)
			}
			// 320 users; u0's 50 repeats count once. The sketch may read a little high.
			it := l.Items[0]
			return it.ItemID == "#eclipse" && it.Views >= 320 && it.Views <= 322, b
		})
	}
	if c, b := call("GET", "/v1/topics?region=mars", nil); c != 400 || !strings.Contains(b, "world, eu, us") {
		t.Fatalf("unknown region: %d %s", c, b)
	}
}
