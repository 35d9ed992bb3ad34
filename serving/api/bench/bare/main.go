// Command bare is the serving benchmark's floor on net/http (bench/run.sh): a handler that
// writes fixed bytes, the response `trending serve` gives for the same request, with the same
// headers and no routing, cache, metrics or query parsing. What trending's API costs beyond
// it is ours; what it costs beyond nginx while bare costs as much is net/http's.
//
//	go run ./serving/api/bench/bare -listen 127.0.0.1:9001 -body hour.json
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:9001", "address to serve on")
	bodyFile := flag.String("body", "", "file holding the response body (required)")
	etag := flag.String("etag", `"bare"`, "ETag header value")
	flag.Parse()
	body, err := os.ReadFile(*bodyFile)
	if err != nil || *bodyFile == "" {
		fmt.Fprintf(os.Stderr, "bare: -body: %v\n", err)
		os.Exit(2)
	}
	// The header values trending's writeList sets, shared and never modified.
	hdr := map[string][]string{
		"Cache-Control":          {"public, max-age=30"},
		"Vary":                   {"Accept, Accept-Encoding"},
		"Etag":                   {*etag},
		"X-Content-Type-Options": {"nosniff"},
		"Content-Type":           {"application/json"},
		"Content-Length":         {strconv.Itoa(len(body))},
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wh := w.Header()
		for k, v := range hdr {
			wh[k] = v
		}
		w.WriteHeader(http.StatusOK)
		w.Write(body)
	})
	fmt.Fprintln(os.Stderr, http.ListenAndServe(*listen, h))
	os.Exit(1)
}
