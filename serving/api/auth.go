package api

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
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
