package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
	"time"

	"trending/model/topicrules"
)

// RequireToken guards an endpoint that changes something (such as POST /v1/events): a request
// without "Authorization: Bearer <token>" gets 401, one with another token 403. An empty token
// means none is configured and h is returned unguarded: the embedded single-process default
// needs no secret, and a deployment that exposes writes sets one (--token).
func RequireToken(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	// Compare digests so the comparison's time reveals neither the token nor its length.
	want := sha256.Sum256([]byte(token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		scheme, given, ok := strings.Cut(auth, " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(given) == "" {
			w.Header().Set("WWW-Authenticate", `Bearer realm="trending"`)
			writeError(w, &apiError{http.StatusUnauthorized, codeUnauthorized,
				"this endpoint changes data: send the configured token as Authorization: Bearer <token>"})
			return
		}
		got := sha256.Sum256([]byte(strings.TrimSpace(given)))
		if subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			writeError(w, &apiError{http.StatusForbidden, codeForbidden, "the bearer token is not the configured one"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// EventsRoute is POST /v1/events, the write path (serving/ingest provides h), behind the
// bearer token when one is configured. The route's contract lives here, beside the others,
// so schemas/openapi.yaml's golden test covers it.
func EventsRoute(h http.Handler, token string) Route {
	return Route{Path: "/v1/events", Methods: []string{http.MethodPost},
		Statuses: []int{202, 400, 401, 403, 405, 413, 503}, Handler: RequireToken(token, h)}
}

// BatchStatusRoute is GET /v1/batch/status: the batch status of the windows of a running
// `trending up` (cmd/trending provides h: `trending batch status --api URL` reads it).
func BatchStatusRoute(h http.Handler) Route {
	return Route{Path: "/v1/batch/status", Methods: []string{http.MethodGet}, Params: []string{"windows", "from", "to"},
		Statuses: []int{200, 400, 405, 500}, Handler: h}
}

// BatchRunRoute is POST /v1/batch/run: a batch run in a running `trending up` (cmd/trending
// provides h), behind the bearer token when one is configured.
func BatchRunRoute(h http.Handler, token string) Route {
	return Route{Path: "/v1/batch/run", Methods: []string{http.MethodPost},
		Statuses: []int{200, 400, 401, 403, 405, 409}, Handler: RequireToken(token, h)}
}

// ViewsRoute is POST /v1/views, the requirements' video API (serving/ingest's Views provides
// h): one view of a video at the server's clock, behind the bearer token when one is set.
func ViewsRoute(h http.Handler, token string) Route {
	return Route{Path: "/v1/views", Methods: []string{http.MethodPost},
		Statuses: []int{202, 400, 401, 403, 405, 413, 503}, Handler: RequireToken(token, h)}
}

// TopicsReviewRoute is /v1/topics/review, the trending-topics review queue (GET lists held
// topics, POST approves or rejects one: speed/topics.ReviewHandler), behind the bearer token
// when one is configured, since a decision changes public lists. onDecide, when set, runs
// after each decision (to persist the queue).
func TopicsReviewRoute(review *topicrules.Review, token string, onDecide func() error) Route {
	return Route{Path: "/v1/topics/review", Methods: []string{http.MethodGet, http.MethodPost}, Params: []string{"status"},
		Statuses: []int{200, 400, 401, 403, 404, 405, 500}, Handler: RequireToken(token, ReviewHandler(review, time.Now, onDecide))}
}
