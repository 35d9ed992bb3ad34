package api

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"trending/model"
	"trending/model/windowset"
)

// apiError is a response that is not a list: status, a short machine-readable code and a
// detail that says what is allowed. writeError is the one place it becomes HTTP.
type apiError struct {
	status int
	code   string
	detail string
}

func (e *apiError) Error() string { return e.code + ": " + e.detail }

func badRequest(code, format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, code, fmt.Sprintf(format, args...)}
}

// Error codes in the "error" field of a response body.
const (
	codeBadQuery         = "bad_query"         // the query string does not parse
	codeUnknownParameter = "unknown_parameter" // a parameter the endpoint does not take
	codeBadParameter     = "bad_parameter"     // a parameter's value is not allowed
	codeNotFound         = "not_found"         // nobody computed the list, or no such path
	codeNotReady         = "not_ready"         // the cache has not loaded yet, or the store is down
	codeMethod           = "method_not_allowed"
	codeUnauthorized     = "unauthorized"
	codeForbidden        = "forbidden"
)

// trendingQuery is a validated GET /v1/trending request.
type trendingQuery struct {
	window string
	group  string    // the region of a list per region; "" for the list of all items
	name   string    // the list's name in the cache: model.Key{Window, Group}.Name()
	start  time.Time // zero: the live list
	limit  int
}

// of names the list's group in an error: "" or " of region eu".
func (q trendingQuery) of(cfg *Config) string {
	if q.group == "" {
		return ""
	}
	return " of " + cfg.Windows.Groups.By + " " + q.group
}

// parseGroup validates a group parameter (the group dimension's name: region=eu): the value
// must be one that gets lists here (windowset.Groups.Accepts). It returns "" when the
// parameter is absent.
func parseGroup(p map[string]string, cfg *Config) (string, *apiError) {
	g := cfg.Windows.Groups
	for _, dim := range windowset.Dimensions {
		v, ok := p[dim]
		if !ok {
			continue
		}
		switch {
		case !g.On():
			return "", badRequest(codeBadParameter, "%s %q: this deployment keeps no lists per %s (trending serve --groups); drop %s for the list of all items", dim, trunc(v), dim, dim)
		case dim != g.By:
			return "", badRequest(codeBadParameter, "%s %q: this deployment keeps lists per %s, not per %s", dim, trunc(v), g.By, dim)
		case !g.Accepts(v):
			return "", badRequest(codeBadParameter, "%s %q: this deployment keeps lists of %s", dim, trunc(v), g.Describe())
		}
		return v, nil
	}
	return "", nil
}

// withGroups is the parameters an endpoint takes, with the group dimensions'.
func withGroups(names ...string) []string { return append(names, windowset.Dimensions...) }

// topicsQuery is a validated GET /v1/topics request.
type topicsQuery struct {
	region, score string
	window        string    // model.TopicsKey(region, score).Name()
	hour          time.Time // zero: the live list; else the batch's exact list of that closed hour
	limit         int
}

// parseTopics validates a GET /v1/topics query: region defaults to world and must be a
// configured list; score, when given, must be the one that list is scored by.
func parseTopics(raw string, cfg *Config, now time.Time) (topicsQuery, *apiError) {
	p, aerr := params(raw, "GET /v1/topics", "region", "score", "limit", "hour")
	if aerr != nil {
		return topicsQuery{}, aerr
	}
	q := topicsQuery{region: topicsWorld, limit: cfg.DefaultLimit}
	if len(cfg.Topics) == 0 {
		return q, &apiError{http.StatusNotFound, codeNotFound, "trending topics are not configured on this server: start it with --topics"}
	}
	if r, ok := p["region"]; ok {
		q.region = r
	}
	sc, ok := cfg.Topics[q.region]
	if !ok {
		return q, badRequest(codeBadParameter, "region %q: use one of %s (default %s)", trunc(q.region), strings.Join(cfg.topicsRegions(), ", "), topicsWorld)
	}
	q.score = sc
	if s, ok := p["score"]; ok && s != sc {
		return q, badRequest(codeBadParameter, "score %q: the %s list is scored by %s; leave score out or use %s", trunc(s), q.region, sc, sc)
	}
	if s, ok := p["limit"]; ok {
		n, ok := parseSmallInt(s)
		if !ok || n < 1 || n > cfg.MaxLimit {
			return q, badRequest(codeBadParameter, "limit %q: use a whole number from 1 to %d (default %d)", trunc(s), cfg.MaxLimit, cfg.DefaultLimit)
		}
		q.limit = n
	}
	if h, ok := p["hour"]; ok {
		t, aerr := parseStart("hour", h, model.Hour, now)
		if aerr != nil {
			return q, aerr
		}
		q.hour = t
	}
	q.window = model.TopicsKey(q.region, q.score).Name()
	return q, nil
}

// windowsQuery is a validated GET /v1/windows request: calendar windows starting in [from, to),
// of all items or of one group value.
type windowsQuery struct {
	window   model.Period
	group    string
	from, to time.Time
	count    int
}

// Defaults of /v1/windows when from is not given: the last day of hours, month of days,
// quarter of weeks, year of months, the open window included.
var defaultWindows = map[model.Period]int{model.Hour: 24, model.Day: 31, model.Week: 13, model.Month: 12}

// params parses a raw query string and checks it names only allowed parameters, each once.
func params(raw string, endpoint string, allowed ...string) (map[string]string, *apiError) {
	vals, err := url.ParseQuery(raw)
	if err != nil {
		return nil, badRequest(codeBadQuery, "the query string does not parse (%v); %s takes %s, as in ?%s=hour",
			err, endpoint, strings.Join(allowed, ", "), allowed[0])
	}
	out := make(map[string]string, len(vals))
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := vals[k]
		if !slices.Contains(allowed, k) {
			return nil, badRequest(codeUnknownParameter, "unknown parameter %q: %s takes %s", trunc(k), endpoint, strings.Join(allowed, ", "))
		}
		if len(v) != 1 {
			return nil, badRequest(codeBadParameter, "parameter %s is given %d times: give it once", k, len(v))
		}
		out[k] = v[0]
	}
	return out, nil
}

// parseTrending validates a GET /v1/trending query at time now.
func parseTrending(raw string, cfg *Config, now time.Time) (trendingQuery, *apiError) {
	p, aerr := params(raw, "GET /v1/trending", withGroups("window", "limit", "start")...)
	if aerr != nil {
		return trendingQuery{}, aerr
	}
	q := trendingQuery{window: p["window"], limit: cfg.DefaultLimit}
	if q.group, aerr = parseGroup(p, cfg); aerr != nil {
		return q, aerr
	}
	_, hasStart := p["start"]
	ws := cfg.Windows
	if q.window == "" {
		return q, badRequest(codeBadParameter, "window is required: this deployment serves %s (a calendar window with start)", ws.Describe())
	}
	if hasStart {
		if !ws.HasCalendar(model.Period(q.window)) && ws.HasLive(q.window) {
			return q, badRequest(codeBadParameter, "window %s has no calendar windows here: drop start for its live list; this deployment serves %s", q.window, ws.Describe())
		}
		if !ws.HasCalendar(model.Period(q.window)) {
			return q, badRequest(codeBadParameter, "window %q with start: not a calendar window here; this deployment serves %s", trunc(q.window), ws.Describe())
		}
	} else {
		w, ok := ws.ResolveLive(q.window)
		if !ok {
			return q, badRequest(codeBadParameter, "window %q is not served here: this deployment serves %s", trunc(q.window), ws.Describe())
		}
		q.window = w
	}
	if s, ok := p["limit"]; ok {
		n, ok := parseSmallInt(s)
		if !ok || n < 1 || n > cfg.MaxLimit {
			return q, badRequest(codeBadParameter, "limit %q: use a whole number from 1 to %d (default %d)", trunc(s), cfg.MaxLimit, cfg.DefaultLimit)
		}
		q.limit = n
	}
	if hasStart {
		t, aerr := parseStart("start", p["start"], model.Period(q.window), now)
		if aerr != nil {
			return q, aerr
		}
		q.start = t
	}
	q.name = model.Key{Window: q.window, Group: q.group}.Name()
	return q, nil
}

// parseWindows validates a GET /v1/windows query at time now.
func parseWindows(raw string, cfg *Config, now time.Time) (windowsQuery, *apiError) {
	p, aerr := params(raw, "GET /v1/windows", withGroups("window", "from", "to")...)
	if aerr != nil {
		return windowsQuery{}, aerr
	}
	q := windowsQuery{window: model.Period(p["window"])}
	if q.group, aerr = parseGroup(p, cfg); aerr != nil {
		return q, aerr
	}
	if cal := cfg.Windows.Calendar(); q.window == "" || !slices.Contains(cal, q.window) {
		what := "none are configured here"
		if len(cal) > 0 {
			what = "use one of " + strings.Join(model.PeriodStrings(cal), ", ")
		}
		if q.window == "" {
			return q, badRequest(codeBadParameter, "window is required: a calendar window: %s", what)
		}
		return q, badRequest(codeBadParameter, "window %q is not a calendar window served here: %s", trunc(string(q.window)), what)
	}
	open := q.window.Align(now)
	end := q.window.Next(open)
	q.to = end
	if s, ok := p["to"]; ok {
		t, aerr := parseBoundary("to", s, q.window)
		if aerr != nil {
			return q, aerr
		}
		if t.After(end) {
			return q, badRequest(codeBadParameter, "to %s is in the future: the latest %s window ends at %s; use to at most that",
				t.Format(time.RFC3339), q.window, end.Format(time.RFC3339))
		}
		q.to = t
	}
	q.from = q.window.Back(q.to, defaultWindows[q.window])
	if s, ok := p["from"]; ok {
		t, aerr := parseBoundary("from", s, q.window)
		if aerr != nil {
			return q, aerr
		}
		q.from = t
	}
	if !q.from.Before(q.to) {
		return q, badRequest(codeBadParameter, "from %s is not before to %s: give a range of at least one %s window",
			q.from.Format(time.RFC3339), q.to.Format(time.RFC3339), q.window)
	}
	q.count = q.window.Count(q.from, q.to)
	if limit := cfg.retain(q.window); q.count > limit {
		return q, badRequest(codeBadParameter, "the range holds %d %s windows: ask for at most %d at a time", q.count, q.window, limit)
	}
	if oldest := q.window.Back(open, cfg.retain(q.window)-1); q.from.Before(oldest) {
		return q, badRequest(codeBadParameter, "from %s is older than the API keeps: the last %d %s windows, from %s on",
			q.from.Format(time.RFC3339), cfg.retain(q.window), q.window, oldest.Format(time.RFC3339))
	}
	return q, nil
}

// parseStart parses an aligned calendar window start that is not in the future.
func parseStart(name, s string, window model.Period, now time.Time) (time.Time, *apiError) {
	t, aerr := parseBoundary(name, s, window)
	if aerr != nil {
		return t, aerr
	}
	if open := window.Align(now); t.After(open) {
		return t, badRequest(codeBadParameter, "%s %s is in the future: the open %s window started at %s; use that or an earlier start",
			name, t.Format(time.RFC3339), window, open.Format(time.RFC3339))
	}
	return t, nil
}

// parseBoundary parses an RFC 3339 time that must be the start of a calendar window.
func parseBoundary(name, s string, window model.Period) (time.Time, *apiError) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil && strings.Contains(s, " ") {
		// A '+' in a query string decodes to a space: 10:00:00+00:00 arrives as 10:00:00 00:00.
		t, err = time.Parse(time.RFC3339, strings.Replace(s, " ", "+", 1))
	}
	if err != nil {
		return t, badRequest(codeBadParameter, "%s %q is not an RFC 3339 time: use the form 2026-11-14T10:00:00Z (percent-encode a + offset as %%2B)", name, trunc(s))
	}
	t = t.UTC()
	if t.Year() < 1 || t.IsZero() {
		return t, badRequest(codeBadParameter, "%s %q is too early: use a time after the year 0001 began", name, trunc(s))
	}
	if !window.Aligned(t) {
		return t, badRequest(codeBadParameter, "%s %s is not the start of a %s window: %s windows start at %s (UTC); the one holding it starts at %s",
			name, t.Format(time.RFC3339Nano), window, window, window.Starts(), window.Align(t).Format(time.RFC3339))
	}
	return t, nil
}

// parseSmallInt accepts only plain decimal digits (no sign, no spaces) of at most 9 digits.
func parseSmallInt(s string) (int, bool) {
	if len(s) == 0 || len(s) > 9 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

// trunc keeps client input echoed in error details short.
func trunc(s string) string {
	const max = 64
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
