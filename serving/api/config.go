package api

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"trending/internal/setting"
	"trending/model"
	"trending/model/moderation"
	"trending/model/windowset"

	"github.com/prometheus/client_golang/prometheus"
)

// HardMaxLimit is the largest list the API can ever be configured to serve (the all-time list's K
// goes up to 1,000). Every allowed request stays one lookup of a precomputed list.
const HardMaxLimit = 1000

// Config configures the serving API. Zero values are not defaults: start from DefaultConfig.
type Config struct {
	// Addr is the listen address. Default ":8080".
	Addr string

	// RefreshInterval is how often the cache reloads the recently written lists (live lists,
	// calendar windows that started within HotSpan, the open and previous month). Default 5s.
	RefreshInterval time.Duration
	// FullRefreshInterval is how often the cache reloads every retained calendar window, to pick
	// up backfills of old windows. Default 1m.
	FullRefreshInterval time.Duration
	// VersionPollInterval is how often the cache asks a store that cannot notify it (ClickHouse:
	// another process writes it) for the stamps of the live lists and of the calendar windows
	// that started within HotSpan, a query of the key columns only, and loads the bodies of
	// the lists whose stamp moved. A store
	// that notifies (the embedded bbolt file, written in this process) is not polled: the cache
	// loads a list as soon as it is written. Default 500ms (longer than RefreshInterval adds
	// nothing: every refresh loads those lists anyway).
	VersionPollInterval time.Duration
	// HotSpan is how far back the frequent refresh looks: the windows the speed and batch layers
	// still write. Default 48h (the open and the closed day, with the nightly batch's delay).
	HotSpan time.Duration
	// ServeStaleFor is how old the newest successful load from the store may grow, while the
	// store is unreachable, before /readyz turns 503. Until then the API stays ready and
	// serves the lists it holds: every replica holds its lists, so a store outage must not
	// take them all out of a load balancer at once. /readyz's body ("store": "unreachable")
	// and trending_serving_store_up say the store is down from the first failed refresh.
	// Default 10m; 30s is the old readiness (503 soon after the store goes away).
	ServeStaleFor time.Duration

	// RetainHours, RetainDays, RetainWeeks and RetainMonths are how many calendar windows of
	// each kind the cache keeps, counting back from the open one; they also bound a
	// /v1/windows range. Defaults 744 (31 days), 366, 106 (two years) and 120.
	RetainHours, RetainDays, RetainWeeks, RetainMonths int

	// Windows are the windows this deployment serves (model/windowset): GET /v1/trending and
	// /v1/windows accept exactly their names (and the aliases 1h and 24h) and refuse others
	// with a 400 listing them; GET /v1/windows/config lists them. Default windowset.Default().
	Windows windowset.Set

	// DefaultLimit is the limit when a request names none. Default 50.
	DefaultLimit int
	// MaxLimit is the largest limit (and /v1/top-videos k) a request may ask for; lists are
	// cached trimmed to it. Default 100, at most HardMaxLimit; DefaultConfigForK derives it
	// from the length of the lists the deployment writes.
	MaxLimit int
	// MaxAge is the Cache-Control max-age of list responses (a CDN keeps a list 30 s,
	// so 20,000 page loads a second mostly never reach the API).
	// Default 30s.
	MaxAge time.Duration
	// CORSOrigins are the browser origins (such as https://dash.example.com) allowed to read the
	// API from another site; "*" allows any. Default none.
	CORSOrigins []string

	// MaxStreams bounds the open GET /v1/trending/stream connections; one more is refused
	// with 503 and Retry-After. Default 10,000.
	MaxStreams int
	// StreamHeartbeat is how often an open stream gets a comment line, so proxies and load
	// balancers keep an idle stream open and a client notices a dead one. Default 15s.
	StreamHeartbeat time.Duration
	// StreamWriteTimeout is how long one event or heartbeat may take to write: a reader that
	// does not take it in time is disconnected (counted in
	// trending_serving_stream_dropped_slow_total) rather than buffered for. Keep it under
	// ShutdownTimeout, so a stuck write cannot hold up the drain. Default 5s.
	StreamWriteTimeout time.Duration

	// HTTP server limits. Defaults: ReadHeaderTimeout 5s, ReadTimeout 10s, WriteTimeout 15s,
	// IdleTimeout 2m, MaxHeaderBytes 16 KiB, ShutdownTimeout 10s (how long Run drains in-flight
	// requests after its context ends).
	ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout, ShutdownTimeout time.Duration
	MaxHeaderBytes                                                             int
	// NoFastPath turns off the fast path (fastpath.go): net/http then accepts and serves
	// every connection. Default false: the cached GETs are served without net/http.
	NoFastPath bool

	// Registerer receives the API's metrics. Default nil: metrics are kept but not exported.
	Registerer prometheus.Registerer
	// Gatherer is what /metrics serves. Default nil: /metrics serves nothing (404).
	Gatherer prometheus.Gatherer

	// Now is the clock; tests replace it. Default time.Now.
	Now func() time.Time
	// Topics maps every trending-topics list the API serves (docs/topics.md) to its score:
	// "world" and each configured region to volume, surge or decayed, as the speed workers'
	// topics.Config has them. GET /v1/topics?region= reads the live list
	// model.TopicsKey(region, score).Name(). Default none: /v1/topics answers 404.
	Topics map[string]string
	// Removed returns the items moderation removes (model/moderation): the cache drops them
	// from every list it serves, within one refresh of a change (a full refresh follows
	// each change), whatever its writer did; the writers drop them too, ranking past them,
	// so a list stays K long once it is written again. nil removes nothing.
	Removed func() *moderation.Set
}

// topicsRegions returns the configured topics lists, "world" first, then by name.
func (c Config) topicsRegions() []string {
	out := make([]string, 0, len(c.Topics))
	for r := range c.Topics {
		if r != topicsWorld {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	if _, ok := c.Topics[topicsWorld]; ok {
		out = append([]string{topicsWorld}, out...)
	}
	return out
}

// topicsWorld is the worldwide list's name, the default region (speed/topics.World).
const topicsWorld = "world"

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		Addr:                ":8080",
		RefreshInterval:     5 * time.Second,
		FullRefreshInterval: time.Minute,
		VersionPollInterval: 500 * time.Millisecond,
		HotSpan:             48 * time.Hour,
		ServeStaleFor:       10 * time.Minute,
		RetainHours:         744,
		RetainDays:          366,
		RetainWeeks:         106,
		RetainMonths:        120,
		DefaultLimit:        50,
		MaxLimit:            100,
		MaxAge:              30 * time.Second,
		MaxStreams:          10000,
		StreamHeartbeat:     15 * time.Second,
		StreamWriteTimeout:  5 * time.Second,
		ReadHeaderTimeout:   5 * time.Second,
		ReadTimeout:         10 * time.Second,
		WriteTimeout:        15 * time.Second,
		IdleTimeout:         2 * time.Minute,
		ShutdownTimeout:     10 * time.Second,
		MaxHeaderBytes:      16 << 10,
		Now:                 time.Now,
		Windows:             windowset.Default(),
	}
}

// DefaultConfigForK returns DefaultConfig for a deployment whose writers (the merger and the
// batch) keep lists of k items: a request may ask for all of them (MaxLimit k), and one that
// names no limit gets DefaultConfig's DefaultLimit, or all k items when there are fewer.
// DefaultConfigForK(100) is DefaultConfig. A k outside 1..HardMaxLimit is kept as it is, so
// Validate refuses it.
func DefaultConfigForK(k int) Config {
	c := DefaultConfig()
	c.MaxLimit, c.DefaultLimit = k, min(c.DefaultLimit, max(k, 1))
	return c
}

// Validate rejects impossible settings with a message that says what to change.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.RefreshInterval <= 0 || c.RefreshInterval > 5*time.Second {
		bad("refresh interval %v: must be between 1ms and 5s (lists must be at most 5 s behind the store)", c.RefreshInterval)
	}
	if c.FullRefreshInterval < c.RefreshInterval {
		bad("full refresh interval %v: must be at least the refresh interval %v", c.FullRefreshInterval, c.RefreshInterval)
	}
	if c.VersionPollInterval <= 0 {
		bad("version poll interval %v: must be positive", c.VersionPollInterval)
	}
	if c.HotSpan < time.Hour {
		bad("hot span %v: must be at least 1h so the open hour is refreshed often", c.HotSpan)
	}
	if c.ServeStaleFor < c.RefreshInterval {
		errs = append(errs, setting.Invalid("ServeStaleFor", "%v: must be at least the refresh interval %v (a healthy store's lists are that old between refreshes)", c.ServeStaleFor, c.RefreshInterval))
	}
	if c.RetainHours < 1 || c.RetainDays < 1 || c.RetainWeeks < 1 || c.RetainMonths < 1 {
		bad("retention %d hours, %d days, %d weeks, %d months: each must be at least 1", c.RetainHours, c.RetainDays, c.RetainWeeks, c.RetainMonths)
	}
	if c.MaxLimit < 1 || c.MaxLimit > HardMaxLimit {
		bad("max limit %d: must be between 1 and %d", c.MaxLimit, HardMaxLimit)
	}
	if c.DefaultLimit < 1 || c.DefaultLimit > c.MaxLimit {
		bad("default limit %d: must be between 1 and the max limit %d", c.DefaultLimit, c.MaxLimit)
	}
	if c.MaxAge < 0 {
		bad("max age %v: must not be negative", c.MaxAge)
	}
	for _, o := range c.CORSOrigins {
		if o != "*" && !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			bad("CORS origin %q: want * or an origin such as https://dash.example.com", o)
		} else if o != "*" && strings.Count(o, "/") > 2 {
			bad("CORS origin %q: an origin has no path; drop everything after the host and port", o)
		}
	}
	if c.MaxStreams < 1 {
		bad("max streams %d: must be at least 1", c.MaxStreams)
	}
	for name, d := range map[string]time.Duration{"stream heartbeat": c.StreamHeartbeat, "stream write timeout": c.StreamWriteTimeout,
		"read header timeout": c.ReadHeaderTimeout, "read timeout": c.ReadTimeout,
		"write timeout": c.WriteTimeout, "idle timeout": c.IdleTimeout, "shutdown timeout": c.ShutdownTimeout} {
		if d <= 0 {
			bad("%s %v: must be positive", name, d)
		}
	}
	if c.MaxHeaderBytes < 1024 {
		bad("max header bytes %d: must be at least 1024", c.MaxHeaderBytes)
	}
	if c.Now == nil {
		bad("clock: Now is nil; start from DefaultConfig")
	}
	if err := c.Windows.Validate(); err != nil {
		bad("windows: %v", err)
	}
	for r, sc := range c.Topics {
		if k, ok := model.ParseName(model.TopicsKey(r, sc).Name()); !ok || k.Group != r {
			bad("topics list %q scored %q: want a region of 1-64 bytes without '/' or control characters, scored %s",
				trunc(r), trunc(sc), strings.Join(model.TopicsScores, ", "))
		}
	}
	slices.SortFunc(errs, func(a, b error) int { return strings.Compare(a.Error(), b.Error()) })
	return errors.Join(errs...)
}

// retain returns how many windows of a calendar kind the cache keeps.
func (c Config) retain(p model.Period) int {
	n, ok := map[model.Period]int{model.Hour: c.RetainHours, model.Day: c.RetainDays, model.Week: c.RetainWeeks, model.Month: c.RetainMonths}[p]
	if !ok {
		panic("BUG: retain of unknown calendar period " + string(p))
	}
	return n
}
