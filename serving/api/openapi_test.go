package api

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"trending/model/moderation"
	"trending/model/topicrules"
	"trending/serving/store/storetest"
)

// The golden test of the API against schemas/openapi.yaml: the routes, parameters and statuses
// the server serves are exactly those the spec lists, the parameter constraints match the
// defaults, real responses validate against the spec's schemas, and every property a schema
// defines shows up in some response (so the spec does not promise a field nobody sends).

type spec struct {
	Paths      map[string]map[string]operation `yaml:"paths"`
	Components struct {
		Schemas   map[string]*schema   `yaml:"schemas"`
		Responses map[string]*response `yaml:"responses"`
	} `yaml:"components"`
}

type operation struct {
	Parameters []struct {
		Name     string  `yaml:"name"`
		In       string  `yaml:"in"`
		Required bool    `yaml:"required"`
		Schema   *schema `yaml:"schema"`
	} `yaml:"parameters"`
	Responses map[string]*response `yaml:"responses"`
}

type response struct {
	Ref     string `yaml:"$ref"`
	Content map[string]struct {
		Schema *schema `yaml:"schema"`
	} `yaml:"content"`
}

type schema struct {
	Ref                  string             `yaml:"$ref"`
	Type                 any                `yaml:"type"`
	Format               string             `yaml:"format"`
	Enum                 []any              `yaml:"enum"`
	Examples             []any              `yaml:"examples"`
	Required             []string           `yaml:"required"`
	Properties           map[string]*schema `yaml:"properties"`
	AdditionalProperties *bool              `yaml:"additionalProperties"`
	Items                *schema            `yaml:"items"`
	Minimum              *float64           `yaml:"minimum"`
	Maximum              *float64           `yaml:"maximum"`
	Default              any                `yaml:"default"`
}

func loadSpec(t *testing.T) *spec {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "schemas", "openapi.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var s spec
	if err := yaml.Unmarshal(raw, &s); err != nil {
		t.Fatalf("schemas/openapi.yaml: %v", err)
	}
	return &s
}

func (s *spec) resolve(sc *schema) *schema {
	for sc != nil && sc.Ref != "" {
		name, ok := strings.CutPrefix(sc.Ref, "#/components/schemas/")
		if !ok || s.Components.Schemas[name] == nil {
			panic("BUG: openapi test: unresolvable $ref " + sc.Ref)
		}
		sc = s.Components.Schemas[name]
	}
	return sc
}

func (s *spec) resolveResponse(r *response) *response {
	if r != nil && r.Ref != "" {
		return s.Components.Responses[strings.TrimPrefix(r.Ref, "#/components/responses/")]
	}
	return r
}

// validator checks JSON values against spec schemas and records which properties it saw.
type validator struct {
	s    *spec
	seen map[*schema]map[string]bool
}

func (v *validator) validate(path string, val any, sc *schema) []string {
	sc = v.s.resolve(sc)
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, path+": "+fmt.Sprintf(format, args...)) }
	var types []string
	switch tt := sc.Type.(type) {
	case string:
		types = []string{tt}
	case []any:
		for _, x := range tt {
			types = append(types, fmt.Sprint(x))
		}
	}
	if len(types) > 0 && !slices.Contains(types, jsonType(val)) && !(jsonType(val) == "integer" && slices.Contains(types, "number")) {
		fail("type %s, want %v", jsonType(val), types)
		return errs
	}
	if len(sc.Enum) > 0 && !slices.ContainsFunc(sc.Enum, func(e any) bool { return fmt.Sprint(e) == fmt.Sprint(val) }) {
		fail("%v is not one of %v", val, sc.Enum)
	}
	switch x := val.(type) {
	case string:
		if sc.Format == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, x); err != nil {
				fail("not a date-time: %v", err)
			}
		}
	case float64:
		if sc.Minimum != nil && x < *sc.Minimum || sc.Maximum != nil && x > *sc.Maximum {
			fail("%v outside [%v, %v]", x, sc.Minimum, sc.Maximum)
		}
	case []any:
		for i, it := range x {
			errs = append(errs, v.validate(fmt.Sprintf("%s[%d]", path, i), it, sc.Items)...)
		}
	case map[string]any:
		for _, r := range sc.Required {
			if _, ok := x[r]; !ok {
				fail("required property %q missing", r)
			}
		}
		if v.seen[sc] == nil {
			v.seen[sc] = map[string]bool{}
		}
		for k, pv := range x {
			ps, ok := sc.Properties[k]
			if !ok {
				if sc.AdditionalProperties != nil && !*sc.AdditionalProperties {
					fail("property %q is not in the spec", k)
				}
				continue
			}
			v.seen[sc][k] = true
			errs = append(errs, v.validate(path+"."+k, pv, ps)...)
		}
	}
	return errs
}

func jsonType(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case float64:
		if x == math.Trunc(x) {
			return "integer"
		}
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// TestOpenAPIRoutes: paths, methods, parameters and statuses agree both ways.
func TestOpenAPIRoutes(t *testing.T) {
	s := loadSpec(t)
	f := newFixture(t, nil)
	if err := f.srv.Handle(ViewsRoute(http.NotFoundHandler(), "")); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Handle(EventsRoute(http.NotFoundHandler(), "")); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Handle(TopicsReviewRoute(topicrules.NewReview(0), "", nil)); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Handle(ModerationRoute(&memModeration{l: moderation.NewList()}, "", nil)); err != nil {
		t.Fatal(err)
	}
	for _, r := range []Route{BatchStatusRoute(http.NotFoundHandler()), BatchRunRoute(http.NotFoundHandler(), "")} {
		if err := f.srv.Handle(r); err != nil {
			t.Fatal(err)
		}
	}
	served := map[string]*route{}
	for _, r := range f.srv.routes {
		served[r.path] = r
	}
	// The dashboard: "/" and the files beside it are one documented route.
	served["/"] = &route{path: "/", methods: []string{"GET", "HEAD"}, statuses: []int{200, 304, 405}}

	var specPaths, servedPaths []string
	for p := range s.Paths {
		specPaths = append(specPaths, p)
	}
	for p := range served {
		servedPaths = append(servedPaths, p)
	}
	sort.Strings(specPaths)
	sort.Strings(servedPaths)
	if !slices.Equal(specPaths, servedPaths) {
		t.Fatalf("paths: spec %v, server %v", specPaths, servedPaths)
	}
	for p, ops := range s.Paths {
		r := served[p]
		var methods []string
		for m := range ops {
			methods = append(methods, strings.ToUpper(m))
		}
		var want []string
		for _, m := range r.methods {
			if m != "HEAD" {
				want = append(want, m)
			}
		}
		if !slices.Equal(sorted(methods), sorted(want)) {
			t.Errorf("%s: spec methods %v, server %v (HEAD is implied by GET)", p, methods, r.methods)
		}
		// A route lists the parameters and statuses of all its methods together.
		var params []string
		var codes []int
		for _, op := range ops {
			for _, prm := range op.Parameters {
				if prm.In != "query" {
					t.Errorf("%s: parameter %s in %s: the API takes only query parameters", p, prm.Name, prm.In)
				}
				if !slices.Contains(params, prm.Name) {
					params = append(params, prm.Name)
				}
			}
			for c := range op.Responses {
				n, err := strconv.Atoi(c)
				if err != nil {
					t.Fatalf("%s: response %q is not a status code", p, c)
				}
				if !slices.Contains(codes, n) {
					codes = append(codes, n)
				}
			}
		}
		if !slices.Equal(sorted(params), sorted(r.params)) {
			t.Errorf("%s: spec parameters %v, server %v", p, params, r.params)
		}
		if !slices.Equal(sortedInts(codes), sortedInts(r.statuses)) {
			t.Errorf("%s: spec statuses %v, server %v", p, sortedInts(codes), sortedInts(r.statuses))
		}
	}

	// Parameter constraints match the server's defaults, on the list and on its stream.
	for _, path := range []string{"/v1/trending", "/v1/trending/stream"} {
		params := map[string]*schema{}
		for _, prm := range s.Paths[path]["get"].Parameters {
			params[prm.Name] = prm.Schema
		}
		cfg := DefaultConfig()
		if l := params["limit"]; l == nil || l.Maximum == nil || int(*l.Maximum) != cfg.MaxLimit || fmt.Sprint(l.Default) != strconv.Itoa(cfg.DefaultLimit) {
			t.Errorf("%s limit: spec %+v, server max %d default %d", path, l, cfg.MaxLimit, cfg.DefaultLimit)
		}
		// The window is configuration: no enum, and the default set as the examples.
		if w := params["window"]; w == nil || w.Enum != nil || fmt.Sprint(w.Examples) != fmt.Sprint(cfg.Windows.Live()) {
			t.Errorf("%s window: spec enum %v examples %v, want no enum and the default live windows %v", path, w.Enum, w.Examples, cfg.Windows.Live())
		}
	}
	for _, path := range []string{"/v1/trending/stream", "/v1/topics/stream"} {
		if _, ok := s.Paths[path]["get"].Responses["200"].Content["text/event-stream"]; !ok {
			t.Errorf("%s: the 200 is not text/event-stream in the spec", path)
		}
	}
}

// TestOpenAPIResponses: real responses validate against the spec's schemas, and every schema
// property appears in some response.
func TestOpenAPIResponses(t *testing.T) {
	s := loadSpec(t)
	f := groupFixture(t, twoRegions) // the fixture's lists and lists per region
	review := topicrules.NewReview(0)
	review.Hold("#quake", "jp", topicrules.ReasonNewTopic, storetest.T0, 3000, 61)
	if err := review.Approve("#quake", "alice", storetest.T0); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Handle(TopicsReviewRoute(review, "", nil)); err != nil {
		t.Fatal(err)
	}
	mod := moderation.NewList()
	mod.Remove("V9", "spam", "alice", storetest.T0)
	mod.Remove("V8", "copyright", "bob", storetest.T0)
	mod.Restore("V8", "licence shown", "bob", storetest.T0)
	if err := f.srv.Handle(ModerationRoute(&memModeration{l: mod}, "", nil)); err != nil {
		t.Fatal(err)
	}
	v := &validator{s: s, seen: map[*schema]map[string]bool{}}
	t0 := storetest.T0
	for _, c := range []struct {
		target string
		status int
	}{
		{"/v1/trending?window=hour", 200},
		{"/v1/trending?window=all&limit=1", 200},
		{"/v1/trending?window=hour&start=" + t0.Add(-time.Hour).Format(time.RFC3339), 200},
		{"/v1/trending?window=day&start=2026-11-14T00:00:00Z", 200},
		{"/v1/trending?window=year", 400},
		{"/v1/trending?window=hour&start=2026-11-14T08:00:00Z", 404},
		{"/v1/trending/stream?window=year", 400},
		{"/v1/trending/stream?window=hour&start=2026-11-14T08:00:00Z", 404},
		{"/v1/windows?window=hour&from=2026-11-14T06:00:00Z", 200},
		{"/v1/windows?window=hour&from=2000-01-01T00:00:00Z", 400},
		{"/v1/trending?window=hour&region=eu", 200},
		{"/v1/trending?window=hour&region=eu&start=" + t0.Add(-time.Hour).Format(time.RFC3339), 200},
		{"/v1/trending?window=hour&region=mars", 400},
		{"/v1/trending?window=day&region=eu", 404},
		{"/v1/windows?window=hour&region=eu", 200},
		{"/v1/windows/config", 200},
		{"/v1/reconciliation", 200},
		{"/v1/topics", 200},
		{"/v1/topics?region=eu&score=surge&limit=3", 200},
		{"/v1/topics?region=eu&hour=2026-11-14T09:00:00Z", 200},
		{"/v1/topics?region=mars", 400},
		{"/v1/topics?region=jp", 404},
		{"/v1/topics/stream?region=mars", 400},
		{"/v1/topics/stream?region=eu&hour=2026-11-14T08:00:00Z", 404},
		{"/v1/topics/review?status=all", 200},
		{"/v1/moderation?status=all", 200},
		{"/v1/moderation?status=gone", 400},
		{"/healthz", 200},
		{"/readyz", 200},
	} {
		w := f.get(c.target)
		if w.Code != c.status {
			t.Fatalf("%s: status %d, want %d", c.target, w.Code, c.status)
		}
		v.check(t, c.target, w.Code, w.Body.Bytes())
	}
	// Ready through a store outage: the body says the store is unreachable.
	f.st.down.Store(true)
	f.srv.Cache().Refresh(context.Background(), false)
	// With an ingest whose Kafka is away too (kafka, kafka_down_since).
	k := &kafkaState{since: time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)}
	f.srv.ReportKafka(k)
	if w := f.get("/readyz"); w.Code != 200 || !strings.Contains(w.Body.String(), `"store":"unreachable"`) || !strings.Contains(w.Body.String(), `"kafka":"unreachable"`) {
		t.Fatalf("readyz with the store down: %d %s", w.Code, w.Body)
	} else {
		v.check(t, "/readyz", w.Code, w.Body.Bytes())
	}
	f.st.down.Store(false)
	f.srv.Cache().Refresh(context.Background(), false)
	// The statuses a healthy fixture cannot produce: 405, 503 past the stream bound, and 503
	// before any load.
	w := f.do(http.MethodDelete, "/v1/windows")
	v.check(t, "/v1/windows", w.Code, w.Body.Bytes())
	f.srv.openStreams.Store(int64(f.srv.cfg.MaxStreams))
	if w := f.get("/v1/trending/stream?window=hour"); w.Code != 503 {
		t.Fatalf("stream past the bound: %d", w.Code)
	} else {
		v.check(t, "/v1/trending/stream", w.Code, w.Body.Bytes())
	}
	f.srv.openStreams.Store(0)
	nf := newFixture(t, func(c *Config) { c.Registerer, c.Gatherer = nil, nil })
	nf.st.down.Store(true)
	srv, _ := New(nf.srv.cfg, nf.st, nil)
	nf.h = srv.Handler()
	for _, p := range []string{"/readyz", "/v1/trending?window=hour", "/v1/trending/stream?window=hour", "/v1/windows?window=day", "/v1/reconciliation"} {
		w := nf.get(p)
		if w.Code != 503 {
			t.Fatalf("%s before loading: %d", p, w.Code)
		}
		v.check(t, p, w.Code, w.Body.Bytes())
	}

	// A decayed list (score, half_life_seconds) and a window set that has one.
	df := decayedFixture(t)
	for _, target := range []string{"/v1/trending?window=now", "/v1/windows/config"} {
		w := df.get(target)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", target, w.Code, w.Body)
		}
		v.check(t, target, w.Code, w.Body.Bytes())
	}

	// A frequent list (views_upper, frequent, guarantee).
	ff := frequentFixture(t)
	for _, target := range []string{"/v1/trending?window=hour", "/v1/windows/config"} {
		w := ff.get(target)
		if w.Code != 200 {
			t.Fatalf("%s: %d %s", target, w.Code, w.Body)
		}
		v.check(t, target, w.Code, w.Body.Bytes())
	}

	for _, name := range []string{"TrendingList", "Item", "TopicsList", "TopicItem", "HeldTopic", "ErrorBound", "Reconciliation", "Reconciliations", "LevelReconciliation", "Windows", "WindowStatus", "Ready", "Health", "Error"} {
		sc := s.Components.Schemas[name]
		for prop := range sc.Properties {
			if !v.seen[sc][prop] {
				t.Errorf("schema %s: property %q never appeared in a response", name, prop)
			}
		}
	}
}

func (v *validator) check(t *testing.T, target string, status int, body []byte) {
	t.Helper()
	path, _, _ := strings.Cut(target, "?")
	op := v.s.Paths[path]["get"]
	resp := v.s.resolveResponse(op.Responses[strconv.Itoa(status)])
	if resp == nil {
		t.Errorf("%s: status %d is not in the spec", target, status)
		return
	}
	media, ok := resp.Content["application/json"]
	if !ok {
		t.Errorf("%s: status %d has no application/json schema", target, status)
		return
	}
	var val any
	if err := json.Unmarshal(body, &val); err != nil {
		t.Errorf("%s: body is not JSON: %v", target, err)
		return
	}
	for _, e := range v.validate(target, val, media.Schema) {
		t.Error(e)
	}
}

func sorted(s []string) []string { s = slices.Clone(s); sort.Strings(s); return s }
func sortedInts(s []int) []int   { s = slices.Clone(s); sort.Ints(s); return s }

// TestOpenAPIGoldenBodies: every golden body (TestGoldenBodies: a list of each kind, the
// batch's exact topics hour among them) is what the spec says its endpoint answers.
func TestOpenAPIGoldenBodies(t *testing.T) {
	s := loadSpec(t)
	v := &validator{s: s, seen: map[*schema]map[string]bool{}}
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	if err != nil || len(files) < 10 {
		t.Fatalf("golden bodies: %d files, %v", len(files), err)
	}
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		target := "/v1/trending"
		if strings.HasPrefix(filepath.Base(f), "topics") {
			target = "/v1/topics"
		}
		v.check(t, target+"?golden="+filepath.Base(f), 200, body)
	}
}
