package api

import (
	"trending/model/topicrules"

	"encoding/json"
	"errors"
	"io"
	"net/http"
	"time"
)

// ReviewHandler serves the review queue over HTTP for an operator tool or the dashboard:
//
//	GET  ?status=pending|approved|rejected|all   the entries, oldest first (default pending)
//	POST {"topic": "quake", "decision": "approve"|"reject", "by": "alice"}
//
// Errors are {"error": code, "detail": text}: 400 bad_request, 404 not_held, 405. It does no
// authentication: mount it behind serving/api's RequireToken (a decision changes public
// lists). onDecide, when set, runs after each decision, to persist the queue.
func ReviewHandler(r *topicrules.Review, now func() time.Time, onDecide func() error) http.Handler {
	if now == nil {
		now = time.Now
	}
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.Method {
		case http.MethodGet, http.MethodHead:
			status := topicrules.Status(req.URL.Query().Get("status"))
			switch status {
			case "":
				status = topicrules.Pending
			case "all":
				status = ""
			case topicrules.Pending, topicrules.Approved, topicrules.Rejected:
			default:
				writeJSONError(w, http.StatusBadRequest, "bad_request", "status must be pending, approved, rejected or all")
				return
			}
			writeJSON(w, http.StatusOK, r.List(status))
		case http.MethodPost:
			var body struct {
				Topic    string `json:"topic"`
				Decision string `json:"decision"`
				By       string `json:"by"`
			}
			dec := json.NewDecoder(io.LimitReader(req.Body, 64<<10))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&body); err != nil || body.Topic == "" {
				writeJSONError(w, http.StatusBadRequest, "bad_request", `the body is {"topic": ..., "decision": "approve" or "reject", "by": ...}`)
				return
			}
			var err error
			switch body.Decision {
			case "approve":
				err = r.Approve(body.Topic, body.By, now().UTC())
			case "reject":
				err = r.Reject(body.Topic, body.By, now().UTC())
			default:
				writeJSONError(w, http.StatusBadRequest, "bad_request", `decision must be "approve" or "reject"`)
				return
			}
			if errors.Is(err, topicrules.ErrNotHeld) {
				writeJSONError(w, http.StatusNotFound, "not_held", err.Error())
				return
			}
			if err == nil && onDecide != nil {
				err = onDecide()
			}
			if err != nil {
				writeJSONError(w, http.StatusInternalServerError, "internal", err.Error())
				return
			}
			st, _ := r.Status(body.Topic)
			writeJSON(w, http.StatusOK, map[string]string{"topic": body.Topic, "status": string(st)})
		default:
			w.Header().Set("Allow", "GET, HEAD, POST")
			writeJSONError(w, http.StatusMethodNotAllowed, "method_not_allowed", "use GET or POST")
		}
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic("BUG: review response does not encode: " + err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func writeJSONError(w http.ResponseWriter, status int, code, detail string) {
	writeJSON(w, status, map[string]string{"error": code, "detail": detail})
}
