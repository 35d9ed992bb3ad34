package api

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"trending/model"
	"trending/serving/store/storetest"
)

// discardWriter is a ResponseWriter that keeps only the status, so the benchmark measures the
// handler rather than a recorder's buffer.
type discardWriter struct {
	h    http.Header
	code int
	n    int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(code int)        { w.code = code }
func (w *discardWriter) Write(b []byte) (int, error) { w.n += len(b); return len(b), nil }

// BenchmarkTrendingHour is GET /v1/trending?window=hour&limit=100 through the whole handler
// (routing, metrics, headers), per variant. "encode-per-request" is the baseline this design
// avoids: json.Marshal of the cached list on every read.
func BenchmarkTrendingHour(b *testing.B) {
	f := newFixture(b, nil)
	etag := f.get("/v1/trending?window=hour&limit=100").Header().Get("ETag")
	for _, c := range []struct {
		name string
		hdr  []string
		code int
	}{
		{"json", nil, 200},
		{"gzip", []string{"Accept-Encoding", "gzip"}, 200},
		{"not-modified", []string{"If-None-Match", etag}, 304},
		{"arrow", []string{"Accept", ArrowMediaType}, 200},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, "/v1/trending?window=hour&limit=100", nil)
			for i := 0; i+1 < len(c.hdr); i += 2 {
				r.Header.Set(c.hdr[i], c.hdr[i+1])
			}
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				f.h.ServeHTTP(w, r)
			}
			if w.code != c.code {
				b.Fatalf("status %d, want %d", w.code, c.code)
			}
			b.SetBytes(int64(w.n / max(1, b.N)))
		})
	}
	b.Run("encode-per-request", func(b *testing.B) {
		e, _ := f.srv.Cache().Get("hour", time.Time{})
		w := &discardWriter{h: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			l := e.list
			resp := ListResponse{Window: l.Window, AsOf: l.AsOf, AgeSeconds: int64(time.Since(l.AsOf).Seconds()), Version: l.Version,
				Source: l.Source, Exact: l.Exact, Incomplete: l.Incomplete, StalePartitions: l.StalePartitions, ErrorBound: l.ErrorBound,
				ComputedAt: l.ComputedAt, Items: make([]ItemResponse, len(l.Items))}
			for i, it := range l.Items {
				resp.Items[i] = ItemResponse{Rank: it.Rank, ItemID: it.ItemID, Title: it.Title, Views: it.Views, Exact: it.Exact}
			}
			body, _ := json.Marshal(resp)
			w.Header().Set("Content-Type", "application/json")
			w.Write(body)
		}
	})
}

// BenchmarkTopVideos is GET /v1/top-videos?window=1h&k=K over an hour list of 1,000 items
// (a deployment of --k 1000, seed 003), through the whole handler; "encode-per-request" is
// the baseline it replaced: the response built and json.Marshal-ed on every read.
func BenchmarkTopVideos(b *testing.B) {
	f := newFixture(b, func(c *Config) {
		k := DefaultConfigForK(1000)
		c.MaxLimit, c.DefaultLimit = k.MaxLimit, k.DefaultLimit
	})
	l := storetest.MakeList("hour", time.Time{}, 500, model.SourceSpeed, 1000, 100000)
	for i := range l.Items {
		l.Items[i].Title, l.Items[i].Thumbnail = fmt.Sprintf("Video %d", i), fmt.Sprintf("https://img.example/v%d.jpg", i)
	}
	if err := f.st.Put(context.Background(), l); err != nil {
		b.Fatal(err)
	}
	if err := f.srv.Cache().Refresh(context.Background(), true); err != nil {
		b.Fatal(err)
	}
	for _, k := range []int{100, 1000} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			r := httptest.NewRequest(http.MethodGet, fmt.Sprintf("/v1/top-videos?window=1h&k=%d", k), nil)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				w.n = 0
				f.h.ServeHTTP(w, r)
			}
			if w.code != 200 {
				b.Fatalf("status %d", w.code)
			}
			b.SetBytes(int64(w.n))
		})
	}
	b.Run("k=1000/encode-per-request", func(b *testing.B) {
		e, _ := f.srv.Cache().Get("hour", time.Time{})
		w := &discardWriter{h: http.Header{}}
		b.ReportAllocs()
		for b.Loop() {
			resp := TopVideosResponse{Window: "1h", AsOf: e.list.AsOf, Videos: make([]TopVideo, 0, len(e.list.Items))}
			for _, it := range e.list.Items {
				resp.Videos = append(resp.Videos, TopVideo{VideoID: it.ItemID, Views: it.Views, Title: it.Title, ThumbnailURL: it.Thumbnail})
			}
			body, _ := json.Marshal(resp)
			w.Write(append(body, '\n'))
		}
	})
}

// BenchmarkCacheMemory reports the heap one cached list takes (list, pre-encoded parts and a
// rendered limit-100 body plus its gzip form), by list size.
func BenchmarkCacheMemory(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("items=%d", n), func(b *testing.B) {
			const lists = 200
			var perList float64
			for b.Loop() {
				src := make([]model.List, lists)
				for i := range src {
					src[i] = storetest.MakeList("hour", storetest.T0.Add(-time.Duration(i)*time.Hour), 1, model.SourceBatch, n, 1000)
					for j := range src[i].Items {
						src[i].Items[j].Title = fmt.Sprintf("A typical video title, number %d", j)
					}
				}
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				entries := make([]*entry, lists)
				for i, l := range src {
					entries[i] = newEntry(l, HardMaxLimit)
					entries[i].json(min(100, n), testNow).gzipped()
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				perList = float64(after.HeapAlloc-before.HeapAlloc) / lists
				runtime.KeepAlive(entries)
				runtime.KeepAlive(src)
			}
			b.ReportMetric(perList, "B/list")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkStreamFanout: 1,000 clients hold GET /v1/trending/stream?window=hour open over real
// TCP to a server on the embedded store; each iteration Puts a new version of the list and
// waits until every client has read it. It reports the delay from the Put to each client's
// receipt of the whole event, across clients and iterations: p50, p99 and max (the goal is
// within 1 s of publication), and the event's size.
func BenchmarkStreamFanout(b *testing.B) {
	for _, clients := range []int{1000} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			l := startLive(b, liveOpts{})
			tr := &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: true}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr}
			type receipt struct {
				version int64
				at      time.Time
			}
			got := make(chan receipt, clients*4)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var eventBytes atomic.Int64
			for range clients {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, l.url+"/v1/trending/stream?window=hour", nil)
				resp, err := hc.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				if resp.StatusCode != 200 {
					b.Fatalf("stream: %d", resp.StatusCode)
				}
				go func() {
					defer resp.Body.Close()
					sc := bufio.NewScanner(resp.Body)
					sc.Buffer(make([]byte, 64<<10), 1<<20)
					var version int64
					n := 0
					for sc.Scan() {
						line := sc.Bytes()
						n += len(line) + 1
						switch {
						case bytes.HasPrefix(line, []byte("id: ")):
							version, _ = strconv.ParseInt(string(line[4:]), 10, 64)
						case len(line) == 0 && version != 0:
							got <- receipt{version, time.Now()}
							eventBytes.Store(int64(n))
							version, n = 0, 0
						case len(line) == 0:
							n = 0
						}
					}
				}()
			}
			for range clients { // everyone has the current version: the streams are open
				<-got
			}
			var delays []time.Duration
			v := int64(30)
			for b.Loop() {
				v++
				ls := seedLists()[0]
				ls.Version, ls.ComputedAt = v, testNow
				start := time.Now()
				if err := l.st.Put(context.Background(), ls); err != nil {
					b.Fatal(err)
				}
				for seen := 0; seen < clients; {
					r := <-got
					if r.version == v {
						delays = append(delays, r.at.Sub(start))
						seen++
					}
				}
			}
			b.StopTimer()
			slices.Sort(delays)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			b.ReportMetric(ms(delays[len(delays)/2]), "p50-ms")
			b.ReportMetric(ms(delays[len(delays)*99/100]), "p99-ms")
			b.ReportMetric(ms(delays[len(delays)-1]), "max-ms")
			b.ReportMetric(float64(eventBytes.Load()), "B/event")
			if n := value(l.srv.cache.m.streamDropped); n != 0 {
				b.Fatalf("%v streams dropped", n)
			}
		})
	}
}

// BenchmarkEncodeList is what loading one version of a list costs: pre-encoding its JSON
// parts (newEntry, from the field tables) and its Arrow stream, for a list of 1,000 items of
// views and a decayed one.
func BenchmarkEncodeList(b *testing.B) {
	views := storetest.MakeList("hour", time.Time{}, 1, model.SourceSpeed, 1000, 1000)
	decayed := views
	decayed.Window, decayed.HalfLifeSeconds, decayed.Items = "now", 3600, slices.Clone(views.Items)
	for i := range views.Items {
		views.Items[i].Title = fmt.Sprintf("A typical video title, number %d", i)
		decayed.Items[i].DecayedScore = float64(decayed.Items[i].Views) + 0.25
		decayed.Items[i].Views = model.DecayedViews(decayed.Items[i].DecayedScore)
	}
	for _, c := range []struct {
		name string
		l    model.List
	}{{"views", views}, {"decayed", decayed}} {
		b.Run(c.name+"/json", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				newEntry(c.l, HardMaxLimit)
			}
		})
		b.Run(c.name+"/arrow", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := encodeArrow(c.l, len(c.l.Items)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTrendingConn is GET /v1/trending?window=hour&limit=100 over a real loopback
// connection (Serve, keep-alive, one request at a time, the client a raw request and a
// response read to its Content-Length), with the fast path (fastpath.go) and with net/http
// alone in the same run: the ratio is the connection layer's saving. Its time includes the
// client and both sides' system calls; the server's share is what `make bench-reads` reads
// from /proc.
func BenchmarkTrendingConn(b *testing.B) {
	for _, c := range []struct {
		name string
		off  bool
		hdr  string
	}{
		{"fast-path", false, ""},
		{"net-http", true, ""},
		{"fast-path-gzip", false, "Accept-Encoding: gzip\r\n"},
		{"net-http-gzip", true, "Accept-Encoding: gzip\r\n"},
	} {
		b.Run(c.name, func(b *testing.B) {
			f := newFixture(b, func(cfg *Config) { cfg.NoFastPath = c.off })
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- f.srv.Serve(ctx, ln) }()
			defer func() { cancel(); <-done }()
			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer conn.Close()
			req := []byte("GET /v1/trending?window=hour&limit=100 HTTP/1.1\r\nHost: bench\r\n" + c.hdr + "\r\n")
			br := bufio.NewReaderSize(conn, 64<<10)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := conn.Write(req); err != nil {
					b.Fatal(err)
				}
				length := -1
				for {
					line, err := br.ReadSlice('\n')
					if err != nil {
						b.Fatal(err)
					}
					if len(line) <= 2 {
						break
					}
					if v, ok := bytes.CutPrefix(line, []byte("Content-Length: ")); ok {
						length, _ = strconv.Atoi(string(bytes.TrimSpace(v)))
					}
				}
				if length < 0 {
					b.Fatal("no Content-Length")
				}
				if _, err := br.Discard(length); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
