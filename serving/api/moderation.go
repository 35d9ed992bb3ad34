package api

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"

	"trending/model/moderation"
)

// ModerationStore is where the shared moderation list lives: internal/modsync over the
// bucket in a deployment. Implementations are safe for concurrent use.
type ModerationStore interface {
	// Load reads the list.
	Load(ctx context.Context) (*moderation.List, error)
	// Update applies change to the list and stores it, atomically; change's error ends it
	// with nothing stored.
	Update(ctx context.Context, change func(*moderation.List) error) (*moderation.List, error)
}

// ModerationRoute is /v1/moderation, the shared list of removed items:
//
//	GET  ?status=removed|restored|all   the decisions, by item (default removed)
//	POST {"item": "V7", "action": "remove"|"restore", "reason": "spam", "by": "alice"}
//
// Both are behind the bearer token, as the topics review queue is: a POST changes public
// lists, and a GET tells who removed what and why. Errors are {"error": code, "detail": text}:
// 400 bad_request, 404 not_removed (a restore of an item that is not removed), 405, 500.
// applied, when set, gets the new removed set after each change, so this process applies it
// at once rather than at its next read of the list.
func ModerationRoute(ms ModerationStore, token string, applied func(*moderation.Set)) Route {
	return Route{Path: "/v1/moderation", Methods: []string{http.MethodGet, http.MethodPost}, Params: []string{"status"},
		Statuses: []int{200, 400, 401, 403, 404, 405, 500}, Handler: moderationHandler(ms, token, time.Now, applied)}
}

// moderationView is GET /v1/moderation's body.
type moderationView struct {
	Removed   int                   `json:"removed"`
	Decisions []moderation.Decision `json:"decisions"`
}

func moderationHandler(ms ModerationStore, token string, now func() time.Time, applied func(*moderation.Set)) http.Handler {
	get := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		status := req.URL.Query().Get("status")
		if status != "" && status != "removed" && status != "restored" && status != "all" {
			writeJSONError(w, http.StatusBadRequest, "bad_request", "status must be removed, restored or all")
			return
		}
		l, err := ms.Load(req.Context())
		if err != nil {
			writeJSONError(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
		v := moderationView{Removed: l.Removed().Len(), Decisions: []moderation.Decision{}}
		for _, d := range l.Decisions() {
			if status == "all" || d.Removed == (status != "restored") {
				v.Decisions = append(v.Decisions, d)
			}
		}
		writeJSON(w, http.StatusOK, v)
	})
	post := http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			Item   string `json:"item"`
			Action string `json:"action"`
			Reason string `json:"reason"`
			By     string `json:"by"`
		}
		dec := json.NewDecoder(io.LimitReader(req.Body, 64<<10))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			writeJSONError(w, http.StatusBadRequest, "bad_request", `the body is {"item": ..., "action": "remove" or "restore", "reason": ..., "by": ...}`)
			return
		}
		at := now().UTC()
		var change func(*moderation.List) error
		switch body.Action {
		case "remove":
			change = func(l *moderation.List) error { return l.Remove(body.Item, body.Reason, body.By, at) }
		case "restore":
			change = func(l *moderation.List) error { return l.Restore(body.Item, body.Reason, body.By, at) }
		default:
			writeJSONError(w, http.StatusBadRequest, "bad_request", `action must be "remove" or "restore"`)
			return
		}
		l, err := ms.Update(req.Context(), change)
		switch {
		case errors.Is(err, moderation.ErrInvalid):
			writeJSONError(w, http.StatusBadRequest, "bad_request", err.Error())
			return
		case errors.Is(err, moderation.ErrNotRemoved):
			writeJSONError(w, http.StatusNotFound, "not_removed", err.Error())
			return
		case err != nil:
			writeJSONError(w, http.StatusInternalServerError, "internal", err.Error())
			return
		}
		if applied != nil {
			applied(l.Removed())
		}
		d, _ := l.Get(body.Item)
		writeJSON(w, http.StatusOK, d)
	})
	return RequireToken(token, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			get.ServeHTTP(w, req)
		case http.MethodPost:
			post.ServeHTTP(w, req)
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			writeJSONError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use GET or POST")
		}
	}))
}
