package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"trending/batch"
	"trending/serving/api"
	"trending/serving/store"
)

// The batch of a running `trending up` from a second terminal: up holds its rollups and
// serving store open (one process may write them), so `trending batch status|run|backfill
// --api URL` asks up's API to do it instead, with up's own engine, archive and store.
//
//	GET  /v1/batch/status?windows=hour&from=today&to=now       the status, batchOutput JSON
//	POST /v1/batch/run  {"windows","from","to","force","dry_run"}  a run, behind --token:
//	     NDJSON lines {"progress": "batch: published ..."} then {"result": batchOutput}
//
// The range is read as on the command line (rangeFlags), at the server's clock.

// batchAPIRequest is the body of POST /v1/batch/run.
type batchAPIRequest struct {
	Command string `json:"command"` // run or backfill (how the result names itself)
	Windows string `json:"windows"`
	From    string `json:"from"`
	To      string `json:"to"`
	Force   bool   `json:"force"`
	DryRun  bool   `json:"dry_run"`
}

// batchAPILine is one line of POST /v1/batch/run's answer.
type batchAPILine struct {
	Progress string       `json:"progress,omitempty"`
	Error    string       `json:"error,omitempty"`
	Usage    bool         `json:"usage,omitempty"` // Error is a mistake in the request (exit 2)
	Result   *batchOutput `json:"result,omitempty"`
}

// batchAPI serves the routes with a runner of its own per request over up's engine,
// archive and store; one run at a time (a second is 409).
type batchAPI struct {
	cfg   batch.Config // up's batch settings (K, lateness, windows)
	eng   batch.Engine
	arc   batch.Archive
	st    store.Store
	log   *slog.Logger
	token string
	busy  sync.Mutex
}

// batchRoutes are the routes, the run behind token (none: open, as up's other writes on a
// loopback address).
func (b *batchAPI) routes() []api.Route {
	return []api.Route{api.BatchStatusRoute(http.HandlerFunc(b.status)), api.BatchRunRoute(http.HandlerFunc(b.run), b.token)}
}

func (b *batchAPI) windows(windows, from, to string, defWindows, defFrom string) ([]batch.Window, []string, time.Time, time.Time, error) {
	if windows == "" { // the command's default kinds, those the window set serves
		windows = servedDefault(defWindows, b.cfg.Windows)
	}
	levels, err := batch.ParseLevels(windows, b.cfg.Windows)
	if err != nil {
		return nil, nil, time.Time{}, time.Time{}, usagef("windows: %v", err)
	}
	ws, lo, hi, err := rangeFlags{windows: windows, from: from, to: to}.windowsOf(levels, defFrom)
	return ws, levels, lo, hi, err
}

// httpError answers as the API does ({"error": code, "detail"}, the codes of the OpenAPI
// spec's Error).
func httpError(w http.ResponseWriter, code int, err error) {
	short := map[int]string{http.StatusBadRequest: "bad_parameter", http.StatusConflict: "busy"}[code]
	if short == "" {
		short = "internal"
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": short, "detail": err.Error()})
}

func (b *batchAPI) status(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	_, levels, lo, hi, err := b.windows(q.Get("windows"), q.Get("from"), q.Get("to"), "day", "yesterday")
	if err != nil {
		httpError(w, http.StatusBadRequest, err)
		return
	}
	runner, err := batch.NewRunner(b.cfg, b.eng, b.arc, b.st, b.log)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err)
		return
	}
	st, err := runner.Status(r.Context(), levels, lo, hi)
	if err != nil {
		httpError(w, http.StatusInternalServerError, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	writeJSON(w, statusOutput(lo, hi, st))
}

// lineWriter sends each progress line as an NDJSON line, flushed at once.
type lineWriter struct {
	mu  sync.Mutex
	enc *json.Encoder
	fl  http.Flusher
	buf []byte
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(l.buf, p...)
	for {
		i := bytes.IndexByte(l.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		l.send(batchAPILine{Progress: string(l.buf[:i])})
		l.buf = l.buf[i+1:]
	}
}

func (l *lineWriter) send(line batchAPILine) {
	l.enc.Encode(line)
	if l.fl != nil {
		l.fl.Flush()
	}
}

func (b *batchAPI) run(w http.ResponseWriter, r *http.Request) {
	var req batchAPIRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		httpError(w, http.StatusBadRequest, fmt.Errorf("body: want {\"windows\", \"from\", \"to\", \"force\", \"dry_run\"}: %w", err))
		return
	}
	ws, _, lo, hi, err := b.windows(req.Windows, req.From, req.To, "hour,day,month", "")
	if err != nil {
		httpError(w, http.StatusBadRequest, err)
		return
	}
	if !b.busy.TryLock() {
		httpError(w, http.StatusConflict, errors.New("another batch run from the API is under way: wait for it, then rerun (reruns are idempotent)"))
		return
	}
	defer b.busy.Unlock()
	w.Header().Set("Content-Type", "application/x-ndjson")
	fl, _ := w.(http.Flusher)
	out := &lineWriter{enc: json.NewEncoder(w), fl: fl}
	cfg := b.cfg
	cfg.Force, cfg.Rebuild, cfg.Progress, cfg.Meter = true, true, out, nil
	runner, err := batch.NewRunner(cfg, b.eng, b.arc, b.st, b.log)
	if err != nil {
		out.send(batchAPILine{Error: err.Error()})
		return
	}
	began := time.Now()
	ctx := context.WithoutCancel(r.Context()) // a client that goes away does not cut a run in half
	if req.DryRun {
		plan, err := runner.Plan(ctx, ws)
		if err != nil {
			out.send(batchAPILine{Error: err.Error()})
			return
		}
		o := planOutput(lo, hi, plan)
		out.send(batchAPILine{Result: &o})
		return
	}
	closed, open, err := splitOpen(ctx, runner, ws, req.Force)
	if err != nil {
		var ue usageError
		out.send(batchAPILine{Error: err.Error(), Usage: errors.As(err, &ue)})
		return
	}
	rep, err := runner.Recompute(ctx, closed)
	if err != nil {
		out.send(batchAPILine{Error: err.Error()})
		return
	}
	name := req.Command
	if name == "" {
		name = "backfill"
	}
	o := reportOutput(name, lo, hi, rep, open, time.Since(began))
	out.send(batchAPILine{Result: &o})
}

// batchClient is a batch subcommand's --api and --api-token: do it in a running up.
type batchClient struct{ url, token string }

func addBatchClientFlags(fs *pflag.FlagSet) *batchClient {
	return addAPIClientFlags(fs, "do it in a running 'trending up' through its API, such as http://127.0.0.1:8080 (up holds its rollups and store; its banner prints this command); the range is read at up's clock",
		"the bearer token up's writes need (its --token), for run and backfill; set it as TRENDING_API_TOKEN")
}

// addAPIClientFlags adds --api and --api-token: an operator command done through a running
// API (batch, moderation).
func addAPIClientFlags(fs *pflag.FlagSet, apiUsage, tokenUsage string) *batchClient {
	c := &batchClient{}
	fs.StringVar(&c.url, "api", "", apiUsage)
	fs.StringVar(&c.token, "api-token", "", tokenUsage)
	return c
}

func (c *batchClient) on() bool { return c.url != "" }

// status asks up for its batch status.
func (c *batchClient) status(cmd *cobra.Command, rf rangeFlags, asJSON bool) error {
	q := url.Values{"windows": {rf.windows}, "from": {rf.from}, "to": {rf.to}}
	resp, err := http.Get(strings.TrimRight(c.url, "/") + "/v1/batch/status?" + q.Encode())
	if err != nil {
		return fmt.Errorf("--api %s: %w (is trending up running there?)", c.url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return apiFailure(c.url, resp.StatusCode, body)
	}
	if asJSON {
		_, err := cmd.OutOrStdout().Write(body)
		return err
	}
	var o batchOutput
	if err := json.Unmarshal(body, &o); err != nil {
		return fmt.Errorf("--api %s: %w", c.url, err)
	}
	return writeStatusRows(cmd.OutOrStdout(), o)
}

// run asks up to run a range, printing its progress lines as they come.
func (c *batchClient) run(cmd *cobra.Command, req batchAPIRequest, asJSON bool) error {
	body, _ := json.Marshal(req)
	hr, err := http.NewRequestWithContext(cmd.Context(), http.MethodPost, strings.TrimRight(c.url, "/")+"/v1/batch/run", bytes.NewReader(body))
	if err != nil {
		return usagef("--api %s: %v", c.url, err)
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.token != "" {
		hr.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return fmt.Errorf("--api %s: %w (is trending up running there?)", c.url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return apiFailure(c.url, resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		var line batchAPILine
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("--api %s: a line that is no batch progress: %w", c.url, err)
		}
		switch {
		case line.Progress != "":
			fmt.Fprintln(cmd.ErrOrStderr(), line.Progress)
		case line.Error != "":
			if line.Usage {
				return usagef("%s", line.Error)
			}
			return errors.New(line.Error)
		case line.Result != nil:
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), line.Result)
			}
			return writeResultText(cmd.OutOrStdout(), *line.Result)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("--api %s: %w", c.url, err)
	}
	return fmt.Errorf("--api %s: the answer ended before the result (did up stop?)", c.url)
}

func apiFailure(u string, code int, body []byte) error {
	var e struct{ Detail string }
	_ = json.Unmarshal(body, &e)
	msg := fmt.Sprintf("--api %s: %d %s: %s", u, code, http.StatusText(code), strings.TrimSpace(e.Detail))
	switch code {
	case http.StatusBadRequest:
		return usagef("%s", msg)
	case http.StatusUnauthorized, http.StatusForbidden:
		return usagef("%s (give up's --token as --api-token)", msg)
	}
	return errors.New(msg)
}

// writeResultText is the text of a result that came as JSON (from up's API).
func writeResultText(w io.Writer, o batchOutput) error {
	s := o.Summary
	if o.DryRun {
		_, err := fmt.Fprintf(w, "%d windows planned, %d open (left out without --force). Dry run: nothing done.\n", s.Planned, s.Open)
		return err
	}
	fmt.Fprintf(w, "batch version %d: %d rollups built, %d lists published, %d kept\n", o.Version, s.Built, s.Published, s.Kept)
	if s.Open > 0 {
		fmt.Fprintf(w, "left out %d windows not closed yet (--force computes them from what is archived so far)\n", s.Open)
	}
	return nil
}

// writeStatusRows is batch status's table from its JSON.
func writeStatusRows(w io.Writer, o batchOutput) error {
	counts := map[string]int{}
	for _, r := range o.Windows {
		recall := "-"
		if r.Reconciliation != nil {
			recall = fmt.Sprintf("%.3f", r.Reconciliation.RecallAtK)
		}
		fmt.Fprintf(w, "%-6s %-22s %-12s version %-14d recall@k %s\n", r.Window, r.Start, r.State, r.Version, recall)
		counts[r.State]++
	}
	var parts []string
	for _, s := range []string{"exact", "dirty", "provisional", "live", "missing"} {
		if counts[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
		}
	}
	_, err := fmt.Fprintf(w, "\n%d windows: %s\n", len(o.Windows), strings.Join(parts, ", "))
	return err
}
