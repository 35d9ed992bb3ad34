// Command probe is the container health check of the trending image: GET a URL and exit 0
// on a 2xx answer, 1 otherwise. The runtime image is distroless (no shell, curl or wget), so
// compose health checks run this static binary instead; Kubernetes probes need nothing.
//
//	probe http://127.0.0.1:8080/readyz
package main

import (
	"fmt"
	"net/http"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: probe URL")
		os.Exit(2)
	}
	os.Exit(check(os.Args[1], 3*time.Second))
}

// check returns the exit code for one GET of url.
func check(url string, timeout time.Duration) int {
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 1
	}
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		fmt.Fprintln(os.Stderr, "probe:", url, resp.Status)
		return 1
	}
	return 0
}
