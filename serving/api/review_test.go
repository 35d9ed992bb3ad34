package api

import (
	"trending/model/topicrules"

	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// reviewT0 is the clock of the review handler tests.
var reviewT0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestReviewHandler(t *testing.T) {
	r := topicrules.NewReview(0)
	r.Hold("quake", "jp", topicrules.ReasonNewTopic, reviewT0, 3000, 61)
	saved := 0
	h := ReviewHandler(r, func() time.Time { return reviewT0 }, func() error { saved++; return nil })
	do := func(method, target, body string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(method, target, strings.NewReader(body)))
		return rec.Code, rec.Body.String()
	}
	for _, tc := range []struct {
		name, method, target, body string
		code                       int
		contains                   string
	}{
		{"list pending", "GET", "/", "", 200, `"topic":"quake"`},
		{"bad status", "GET", "/?status=maybe", "", 400, "bad_request"},
		{"approve", "POST", "/", `{"topic":"quake","decision":"approve","by":"alice"}`, 200, `"status":"approved"`},
		{"no pending left", "GET", "/", "", 200, "[]"},
		{"all", "GET", "/?status=all", "", 200, `"by":"alice"`},
		{"not held", "POST", "/", `{"topic":"nope","decision":"reject"}`, 404, "not_held"},
		{"bad decision", "POST", "/", `{"topic":"quake","decision":"maybe"}`, 400, "bad_request"},
		{"unknown field", "POST", "/", `{"topic":"quake","decision":"reject","x":1}`, 400, "bad_request"},
		{"not json", "POST", "/", `topic=quake`, 400, "bad_request"},
		{"method", "DELETE", "/", "", 405, "method_not_allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := do(tc.method, tc.target, tc.body)
			if code != tc.code || !strings.Contains(body, tc.contains) {
				t.Fatalf("%d %s, want %d containing %s", code, body, tc.code, tc.contains)
			}
			if !json.Valid([]byte(body)) {
				t.Fatalf("body is not JSON: %s", body)
			}
		})
	}
	if saved != 1 {
		t.Errorf("onDecide ran %d times, want 1", saved)
	}
	if st, _ := r.Status("quake"); st != topicrules.Approved {
		t.Errorf("status %v", st)
	}
}
