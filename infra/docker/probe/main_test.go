package main

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

func TestCheck(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			w.WriteHeader(http.StatusOK)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	for _, c := range []struct {
		url  string
		want int
	}{
		{srv.URL + "/readyz", 0},
		{srv.URL + "/other", 1},
		{"http://127.0.0.1:1/readyz", 1},
	} {
		if got := check(c.url, time.Second); got != c.want {
			t.Errorf("check(%s) = %d, want %d", c.url, got, c.want)
		}
	}
}
