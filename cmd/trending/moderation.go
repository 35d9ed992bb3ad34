package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"trending/internal/modsync"
	"trending/internal/objstore"
	"trending/model/moderation"
	"trending/serving/api"
	"trending/speed/worker"
)

func init() {
	subcommands = append(subcommands, newModerationCmd)
}

// newModerationCmd is `trending moderation` (docs/moderation.md): the operator's side of the
// shared moderation list, in the bucket (--s3-*) or through a running API (--api).
func newModerationCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "moderation",
		Short: "Remove items from every served list, restore them, list the decisions",
		Long: `moderation changes the shared list of removed items (moderation/removed.json in the S3
bucket, --s3-*; or through a running API with --api URL, POST /v1/moderation). Every role
applies it within a minute: the merger and the batch drop removed items before ranking (the
lists keep K items), the API drops them from the lists it serves. Nothing is deleted: the
items' events stay in Kafka, the archive and the rollups, and a restore brings them back
with their counts. See docs/moderation.md.`,
		Args: cobra.NoArgs,
	}
	var mf moderationFlags
	for _, sub := range []*cobra.Command{
		{Use: "remove ITEM", Short: "Remove an item from every served list", Args: cobra.ExactArgs(1),
			Example: `  trending moderation remove V7 --reason "spam ring" --by alice
  trending moderation remove V7 --reason copyright --by alice --api http://127.0.0.1:8080 --token T`},
		{Use: "restore ITEM", Short: "Bring a removed item back", Args: cobra.ExactArgs(1),
			Example: `  trending moderation restore V7 --reason "appeal granted" --by bob`},
		{Use: "list", Short: "List the removed items (--all: the restored ones too)", Args: cobra.NoArgs,
			Example: `  trending moderation list --json`},
	} {
		action := strings.Fields(sub.Use)[0]
		sub.RunE = func(cmd *cobra.Command, args []string) error { return mf.run(cmd, action, args) }
		mf.add(sub)
		cmd.AddCommand(sub)
	}
	return cmd
}

// moderationFlags are the flags of every moderation subcommand (each has its own set).
type moderationFlags struct {
	reason, by  string
	asJSON, all bool
	client      map[*cobra.Command]*batchClient
	s3          map[*cobra.Command]*s3Settings
}

func (m *moderationFlags) add(cmd *cobra.Command) {
	f := cmd.Flags()
	if cmd.Name() != "list" {
		f.StringVar(&m.reason, "reason", "", "why, recorded with the decision (required)")
		addByFlag(f, &m.by)
	} else {
		addAllFlag(f, &m.all, "list restored items too")
	}
	addJSONFlag(f, &m.asJSON, "the decision or the list")
	if m.client == nil {
		m.client = map[*cobra.Command]*batchClient{}
	}
	m.client[cmd] = addAPIClientFlags(f, "do it through a running API ('serve --moderation' or 'up'), such as http://127.0.0.1:8080, instead of in the bucket",
		"with --api: the bearer token of its writes (its --token); set it as TRENDING_API_TOKEN")
	if m.s3 == nil {
		m.s3 = map[*cobra.Command]*s3Settings{}
	}
	m.s3[cmd] = addS3Settings(f, "http://127.0.0.1:39000", "S3 API URL of the bucket holding the shared moderation list (empty for AWS S3)")
}

func (m *moderationFlags) run(cmd *cobra.Command, action string, args []string) error {
	ctx := cmd.Context()
	var ms api.ModerationStore
	c := m.client[cmd]
	where := c.url
	if c.on() {
		ms = &httpModeration{url: strings.TrimRight(c.url, "/"), token: c.token}
	} else {
		s3f := m.s3[cmd]
		obj, err := objstore.New(ctx, s3f.config())
		if err != nil {
			return usagef("%v", err)
		}
		if action != "list" {
			if err := obj.EnsureBucket(ctx); err != nil {
				return fmt.Errorf("bucket %s: %w", s3f.bucket, err)
			}
		}
		ms = &objModeration{obj: obj}
		where = s3f.endpoint + "/" + s3f.bucket + "/" + modsync.Key
	}
	out := cmd.OutOrStdout()
	if action == "list" {
		l, err := ms.Load(ctx)
		if err != nil {
			return fmt.Errorf("moderation list %s: %w", where, err)
		}
		var ds []moderation.Decision
		for _, d := range l.Decisions() {
			if d.Removed || m.all {
				ds = append(ds, d)
			}
		}
		return writeDecisions(out, ds, m.asJSON)
	}
	item := args[0]
	if m.by == "" {
		m.by = os.Getenv("USER")
	}
	at := time.Now().UTC()
	l, err := ms.Update(ctx, func(l *moderation.List) error {
		if action == "remove" {
			return l.Remove(item, m.reason, m.by, at)
		}
		return l.Restore(item, m.reason, m.by, at)
	})
	switch {
	case errors.Is(err, moderation.ErrInvalid):
		return usagef("%v (--reason and --by)", err)
	case errors.Is(err, moderation.ErrNotRemoved):
		return usagef("%q is not removed in %s: 'trending moderation list' lists the removed items", item, where)
	case err != nil:
		return fmt.Errorf("moderation list %s: %w", where, err)
	}
	d, _ := l.Get(item)
	if m.asJSON {
		return writeDecisions(out, []moderation.Decision{d}, true)
	}
	verb := map[string]string{"remove": "removed", "restore": "restored"}[action]
	fmt.Fprintf(out, "%s %s (by %s: %s); every role applies it within a minute\n", verb, item, d.By, d.Reason)
	return nil
}

func writeDecisions(out io.Writer, ds []moderation.Decision, asJSON bool) error {
	if ds == nil {
		ds = []moderation.Decision{}
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(ds)
	}
	if len(ds) == 0 {
		fmt.Fprintln(out, "no items removed")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ITEM\tSTATE\tBY\tAT\tREASON")
	for _, d := range ds {
		state := "removed"
		if !d.Removed {
			state = "restored"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", d.Item, state, d.By, d.At.Format(time.RFC3339), d.Reason)
	}
	return tw.Flush()
}

// objModeration is the shared list in the bucket (internal/modsync): the CLI's default, and
// the store behind the API's /v1/moderation in serve and up.
type objModeration struct{ obj *objstore.Client }

func (o *objModeration) Load(ctx context.Context) (*moderation.List, error) {
	return modsync.Load(ctx, o.obj, modsync.Key)
}

func (o *objModeration) Update(ctx context.Context, change func(*moderation.List) error) (*moderation.List, error) {
	return modsync.Update(ctx, o.obj, modsync.Key, change)
}

// httpModeration is the list through a running API's /v1/moderation (--api).
type httpModeration struct{ url, token string }

func (h *httpModeration) do(ctx context.Context, method, target string, body []byte) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, h.url+target, bytes.NewReader(body))
	if err != nil {
		return nil, usagef("--api %s: %v", h.url, err)
	}
	if h.token != "" {
		req.Header.Set("Authorization", "Bearer "+h.token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		var e struct{ Error, Detail string }
		json.Unmarshal(b, &e)
		switch {
		case e.Error == "not_removed":
			return nil, fmt.Errorf("%w: %s", moderation.ErrNotRemoved, e.Detail)
		case e.Error == "bad_request" && resp.StatusCode == http.StatusBadRequest:
			return nil, fmt.Errorf("%w: %s", moderation.ErrInvalid, e.Detail)
		case resp.StatusCode == http.StatusNotFound:
			return nil, usagef("--api %s has no /v1/moderation: start serve with --s3-* (or up)", h.url)
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			return nil, usagef("--api %s: %s (--api-token)", h.url, e.Detail)
		}
		return nil, fmt.Errorf("%s %s: %s: %s %s", method, target, resp.Status, e.Error, e.Detail)
	}
	return b, nil
}

func (h *httpModeration) Load(ctx context.Context) (*moderation.List, error) {
	b, err := h.do(ctx, http.MethodGet, "/v1/moderation?status=all", nil)
	if err != nil {
		return nil, err
	}
	var v struct{ Decisions []moderation.Decision }
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("GET /v1/moderation: %w", err)
	}
	enc, _ := json.Marshal(struct {
		Version   int                   `json:"version"`
		Decisions []moderation.Decision `json:"decisions"`
	}{1, v.Decisions})
	l := moderation.NewList()
	return l, l.UnmarshalJSON(enc)
}

// Update sends the one decision change makes to an empty list; the server applies it to the
// shared one (the API's decision, not a copy of the whole list, so nothing is overwritten).
func (h *httpModeration) Update(ctx context.Context, change func(*moderation.List) error) (*moderation.List, error) {
	cur, err := h.Load(ctx)
	if err != nil {
		return nil, err
	}
	before := map[string]moderation.Decision{}
	for _, d := range cur.Decisions() {
		before[d.Item] = d
	}
	if err := change(cur); err != nil {
		return nil, err
	}
	for _, d := range cur.Decisions() {
		if before[d.Item] == d {
			continue
		}
		action := "restore"
		if d.Removed {
			action = "remove"
		}
		body, _ := json.Marshal(map[string]string{"item": d.Item, "action": action, "reason": d.Reason, "by": d.By})
		if _, err := h.do(ctx, http.MethodPost, "/v1/moderation", body); err != nil {
			return nil, err
		}
	}
	return h.Load(ctx)
}

// addModerationFlag adds --moderation to a long-running command that applies the shared
// moderation list (merge, serve); up always applies it, the batch always reads it.
func addModerationFlag(cmd *cobra.Command, on *bool) {
	cmd.Flags().BoolVar(on, "moderation", false, "apply the shared moderation list (moderation/removed.json in the bucket, --s3-*; docs/moderation.md): removed items leave the lists within a minute; serve also mounts /v1/moderation with --token")
}

// moderationWatcher is a long-running process's copy of the removed set: read once now (a
// failure is logged and the process starts with nothing removed; it retries every tick),
// then every modsync.DefaultEvery by the returned role.
func moderationWatcher(ctx context.Context, obj *objstore.Client, a *app) (*modsync.Watcher, role, error) {
	log := a.log.With("part", "moderation")
	w, err := modsync.NewWatcher(obj, modsync.Key, modsync.DefaultEvery, log, a.registry)
	if err != nil {
		return nil, role{}, err
	}
	if err := w.Refresh(ctx); err != nil {
		log.Warn("moderation list not read; starting with nothing removed, retrying every tick", "err", err)
	}
	return w, role{"moderation", w.Run}, nil
}

// loadRemoved reads the removed set once, for a one-shot batch run: a run that cannot read
// the list fails rather than publish removed items.
func loadRemoved(ctx context.Context, obj *objstore.Client) (*moderation.Set, error) {
	l, err := modsync.Load(ctx, obj, modsync.Key)
	if err != nil {
		return nil, fmt.Errorf("moderation list: %w", err)
	}
	return l.Removed(), nil
}

// addCapViewsFlag adds --cap-views, the per-account cap (docs/moderation.md#per-account-caps),
// shared by speed, batch and up: give the speed workers and the batch the same value, so the
// exact lists stay the truth of the capped stream.
func addCapViewsFlag(fs *pflag.FlagSet, n *uint32) {
	fs.Uint32Var(n, "cap-views", 0, "per-account cap: one account (an event's user_id) adds at most this many views to an item per UTC hour, in the speed layer and the batch alike; events without user_id are not capped (0: no cap)")
}

// addCapSlotsFlag adds --cap-slots, the size of each speed partition's caps' table.
func addCapSlotsFlag(fs *pflag.FlagSet, n *int) {
	fs.IntVar(n, "cap-slots", worker.DefaultConfig().Cap.Slots, "with --cap-views: slots of each partition's caps' table, 16 bytes each (a power of two; size it with 'trending plan --cap-pairs'); an account's event that finds none free is counted uncapped (trending_speed_cap_uncapped_events_total)")
}
