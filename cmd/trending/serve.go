package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
	"trending/internal/topicstore"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"trending/internal/eventlog"
	"trending/internal/modsync"
	"trending/internal/objstore"
	"trending/internal/setting"
	"trending/model/salt"
	"trending/model/topicrules"
	"trending/model/windowset"
	"trending/serving/api"
	"trending/serving/ingest"
	"trending/serving/store"
	boltstore "trending/serving/store/bolt"
	"trending/speed/topics"
)

func init() { subcommands = append(subcommands, newServeCommand) }

func newServeCommand() *cobra.Command {
	var af *apiFlags
	var k int
	var tf *topicsFlags
	var storeSpec string
	var tok tokenFlags
	var future time.Duration
	var kf *kafkaFlags
	var s3f *s3Settings
	var wsf *windowSetFlags
	var saltf *saltFlags
	var moderated bool
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the top-K lists over HTTP, with a dashboard at /",
		Long: `serve answers every read from an in-memory cache of the serving store, refreshed in the
background (the lists still being written every --refresh, every retained window every
--full-refresh): a read never touches the store, and a list's JSON is encoded once per version.
Between refreshes a new version is loaded as soon as the embedded store has it, or, from
ClickHouse, within --version-poll (a query of the key columns only).
If the store becomes unreachable the API keeps serving the lists it holds and stays ready:
/readyz answers 200 with "store": "unreachable" (and trending_serving_store_up is 0) until
the newest lists loaded are older than --serve-stale-for, then 503; it recovers by itself.

  GET /v1/trending?window=hour|day|month|all&limit=N   a live list (limit default 50); the
                                                       windows are --window-set's (1h, 24h:
                                                       the sliding windows of that length)
  GET /v1/trending?window=hour|day|month&start=T       one calendar window (exact after the batch)
  GET /v1/windows/config                               the configured windows
  GET /v1/trending/stream?window=...                   the same list pushed as server-sent
                                                       events: at once, then every new version
  GET /v1/windows?window=hour|day|month&from=T&to=T    which calendar windows are live,
                                                       provisional, exact or missing
  GET /v1/reconciliation                               per level, the speed layer against the
                                                       newest exact window: recall@K, errors
                                                       and the stated bound (also as the
                                                       trending_reconciliation_* metrics)
  GET /v1/topics?region=R&limit=N                      trending topics (with --topics, as the
                                                       speed workers have them)
  GET /v1/topics/stream?region=R                       the same list pushed as it changes
  GET|POST /v1/topics/review                           the held topics; approve or reject one
                                                       (with --topics and --token: the shared
                                                       queue in the S3 bucket, --s3-*)
  GET /healthz  /readyz  /metrics                      liveness, readiness, Prometheus
  GET /                                                the dashboard
  POST /v1/events                                      ingest (with --kafka): one event or a
                                                       batch, pre-summed and published to Kafka

With Accept: application/vnd.apache.arrow.stream a list comes as an Arrow IPC stream.
schemas/openapi.yaml describes every route.`,
		Example: `  # serve the embedded store on port 8080
  trending serve --store bolt:./data/serving.db

  # lists of 1,000 items (the merger's and the batch's --k 1000): limit and k up to 1,000
  trending serve --k 1000

  # allow a dashboard on another origin, longer CDN lifetime
  trending serve --cors-origins https://dash.example.com --max-age 60s`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a := appFrom(cmd.Context())
			tcfg, err := tf.config()
			if err != nil {
				return err
			}
			ws, err := wsf.set()
			if err != nil {
				return err
			}
			cfg, err := af.config(k, ws, tcfg, a)
			if err != nil {
				return err
			}
			if err := tok.check(cfg.Addr, kf.set()); err != nil { // the review queue and /v1/moderation are mounted only with --token
				return err
			}
			var watch *modsync.Watcher
			var modRole role
			var modObj *objstore.Client
			if moderated {
				if modObj, err = objstore.New(cmd.Context(), s3f.config()); err != nil {
					return usagef("%v", err)
				}
				if watch, modRole, err = moderationWatcher(cmd.Context(), modObj, a); err != nil {
					return err
				}
				cfg.Removed = watch.Removed
			}
			mf, err := maxFuture(future)
			if err != nil {
				return err
			}
			if saltf.on() && !kf.set() {
				return usagef("--salt-items and --salt-threshold salt what POST /v1/events publishes: give --kafka")
			}
			var kc *eventlog.Client
			if kf.set() {
				if kc, err = kf.client(cmd); err != nil {
					return err
				}
			}
			st, err := openStore(storeSpec)
			if err != nil {
				return err
			}
			defer st.Close()
			srv, err := api.New(cfg, st, a.log)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", cfg.Addr)
			if err != nil {
				return usagef("--listen %s: %v (pick a free address)", cfg.Addr, err)
			}
			p := servingRoles{api: role{"api", func(ctx context.Context) error { return srv.Serve(ctx, ln) }}, moderation: modRole}
			if watch != nil {
				// The list is applied whatever the token; changed here only behind one
				// (`trending moderation` changes it in the bucket either way).
				where := s3f.endpoint + "/" + s3f.bucket + "/" + modsync.Key
				if tok.review != "" {
					if err := srv.Handle(api.ModerationRoute(&objModeration{obj: modObj}, tok.review, watch.Set)); err != nil {
						return err
					}
					a.log.Info("moderation enabled", "path", "/v1/moderation", "s3", where)
				} else {
					a.log.Info("moderation applied; /v1/moderation not mounted (it needs --token)", "s3", where)
				}
			}
			if cfg.Topics != nil && tok.review != "" {
				if p.review, err = mountSharedReview(cmd.Context(), a, srv, s3f, tok.review); err != nil {
					return err
				}
			}
			if kc != nil {
				kw := kc.NewWriter(kf.names().Views)
				defer kw.Close()
				salter, saltRole, err := saltf.build(kc, kf.names(), a.log, a.registry, "ingest")
				if err != nil {
					return err
				}
				p.salting = saltRole
				if p.ingest, err = mountIngest(srv, a, kw, tok.events(), salter, mf); err != nil {
					return err
				}
				a.log.Info("ingest enabled", "path", "/v1/events", "kafka", kc.Brokers(), "topic", kf.names().Views)
			}
			a.log.Info("serving", "addr", ln.Addr().String(), "store", redactDSN(storeSpec))
			return runProcess(cmd.Context(), a.log, p.stages()...)
		},
	}
	f := cmd.Flags()
	kf = addKafkaFlags(f, "", "Kafka brokers for POST /v1/events (published to --views-topic); empty (the default) serves reads only")
	addTokenFlags(f, &tok)
	addMaxFutureFlag(f, &future)
	saltf = addSaltFlags(f)
	addStoreFlag(f, &storeSpec, "bolt:./data/serving.db", "")
	wsf = addWindowSetFlags(f, "")
	addKFlag(f, &k, "length of the lists the writers keep (the merger's and the batch's --k): a request may ask for that many items (--limit, /v1/top-videos k), unless --max-limit")
	af = addAPIFlags(f, api.DefaultConfig().Addr)
	tf = addTopicsFlags(f, false, 0)
	s3f = addS3Settings(f, "http://127.0.0.1:39000", "S3 API URL of the bucket holding the shared topics review queue and moderation list (empty for AWS S3)")
	addModerationFlag(cmd, &moderated)
	return withClickHouseSecurity(cmd)
}

// tokenFlags are the bearer tokens of the API's write routes, shared by serve and up.
type tokenFlags struct {
	review, ingest string
	open           bool // --open-writes: the operator's explicit word that writes need no token
}

// addTokenFlags adds --token, --ingest-token and --open-writes.
func addTokenFlags(fs *pflag.FlagSet, t *tokenFlags) {
	fs.StringVar(&t.review, "token", "", "bearer token of the write routes: POST /v1/events and /v1/views (unless --ingest-token) and /v1/topics/review (with --topics; serve: the shared review queue kept in the S3 bucket, --s3-*); required when --listen is reachable from other machines (use TRENDING_TOKEN to keep it out of the process list)")
	fs.StringVar(&t.ingest, "ingest-token", "", "bearer token POST /v1/events and /v1/views require (default: --token)")
	fs.BoolVar(&t.open, "open-writes", false, "accept writes without a token on a --listen address other machines can reach (only behind a gateway that authenticates them); on a loopback address writes are open to this machine without it")
}

// check refuses to start a process whose write routes would take writes from the network
// without a token: ingest says whether it mounts POST /v1/events and /v1/views (behind
// --ingest-token or --token), operator the routes it mounts behind --token. On a loopback
// address writes stay open to this machine (the no-token demo of up), and --open-writes is
// the operator's explicit opt-out anywhere.
func (t tokenFlags) check(listen string, ingest bool, operator ...string) error {
	if t.open || loopback(listen) {
		return nil
	}
	open := t.openWrites(ingest, operator...)
	if open == "" {
		return nil
	}
	return usagef("--listen %s is reachable from other machines and %s would accept writes from anyone: set --token (or TRENDING_TOKEN; --ingest-token for the events alone), listen on a loopback address such as 127.0.0.1:8080, or pass --open-writes if a gateway in front authenticates them",
		listen, open)
}

// openWrites names the write routes that answer without a token ("" when none).
func (t tokenFlags) openWrites(ingest bool, operator ...string) string {
	var open []string
	if ingest && t.events() == "" {
		open = append(open, "POST /v1/events and /v1/views")
	}
	if t.review == "" {
		open = append(open, operator...)
	}
	return strings.Join(open, " and ")
}

// loopback reports whether addr (host:port) listens only on this machine: a loopback IP or
// localhost. An empty host (":8080") or 0.0.0.0 listens on every interface.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// events returns the token POST /v1/events requires.
func (t tokenFlags) events() string {
	if t.ingest != "" {
		return t.ingest
	}
	return t.review
}

// apiFlags are the serving API's settings, the same flags in serve and up; config is the one
// constructor of the API's configuration from them.
type apiFlags struct {
	fs       *pflag.FlagSet
	cfg      api.Config // the flags' values over api.DefaultConfig
	fastPath bool       // --fast-path; the config says NoFastPath
}

// addAPIFlags adds the API's flags (listen is --listen's default): the cache's refreshes, the
// retention, the limits, the HTTP server's limits, CORS and streams.
func addAPIFlags(f *pflag.FlagSet, listen string) *apiFlags {
	af := &apiFlags{fs: f, cfg: api.DefaultConfig()}
	cfg := &af.cfg
	addListenFlag(f, &cfg.Addr, listen)
	f.DurationVar(&cfg.RefreshInterval, "refresh", cfg.RefreshInterval, "how often to reload the lists still being written (at most 5s)")
	f.DurationVar(&cfg.FullRefreshInterval, "full-refresh", cfg.FullRefreshInterval, "how often to reload every retained calendar window (picks up backfills)")
	f.DurationVar(&cfg.VersionPollInterval, "version-poll", cfg.VersionPollInterval, "how often to ask a ClickHouse store which lists changed (key columns only) and load just those; the embedded store says so itself")
	f.DurationVar(&cfg.HotSpan, "hot-span", cfg.HotSpan, "calendar windows that started this recently are reloaded every --refresh")
	addServeStaleFlag(f, &cfg.ServeStaleFor)
	f.IntVar(&cfg.RetainHours, "retain-hours", cfg.RetainHours, "calendar hour windows to keep and the longest /v1/windows hour range")
	f.IntVar(&cfg.RetainDays, "retain-days", cfg.RetainDays, "calendar day windows to keep and the longest /v1/windows day range")
	f.IntVar(&cfg.RetainMonths, "retain-months", cfg.RetainMonths, "calendar month windows to keep and the longest /v1/windows month range")
	f.IntVar(&cfg.DefaultLimit, "default-limit", 0, "items in a list when the request names no limit (default 50, or --k when smaller)")
	f.IntVar(&cfg.MaxLimit, "max-limit", 0, fmt.Sprintf("largest limit (and /v1/top-videos k) a request may ask for, at most %d (default --k: every item of a list)", api.HardMaxLimit))
	f.DurationVar(&cfg.MaxAge, "max-age", cfg.MaxAge, "Cache-Control max-age of list responses")
	f.IntVar(&cfg.MaxStreams, "max-streams", cfg.MaxStreams, "most open GET /v1/trending/stream connections; more are refused with 503")
	f.DurationVar(&cfg.StreamHeartbeat, "stream-heartbeat", cfg.StreamHeartbeat, "how often an open stream gets a heartbeat comment")
	f.DurationVar(&cfg.StreamWriteTimeout, "stream-write-timeout", cfg.StreamWriteTimeout, "a stream reader that does not take an event within this is disconnected")
	f.StringSliceVar(&cfg.CORSOrigins, "cors-origins", nil, "origins allowed to read the API from a browser on another site, comma-separated; * for any")
	f.DurationVar(&cfg.ReadHeaderTimeout, "read-header-timeout", cfg.ReadHeaderTimeout, "time to read a request's headers")
	f.DurationVar(&cfg.ReadTimeout, "read-timeout", cfg.ReadTimeout, "time to read a whole request")
	f.DurationVar(&cfg.WriteTimeout, "write-timeout", cfg.WriteTimeout, "time to write a response")
	f.DurationVar(&cfg.IdleTimeout, "idle-timeout", cfg.IdleTimeout, "how long an idle keep-alive connection stays open")
	f.DurationVar(&cfg.ShutdownTimeout, "shutdown-timeout", cfg.ShutdownTimeout, "how long to drain in-flight requests on shutdown")
	f.IntVar(&cfg.MaxHeaderBytes, "max-header-bytes", cfg.MaxHeaderBytes, "largest request header block in bytes")
	f.BoolVar(&af.fastPath, "fast-path", !cfg.NoFastPath, "serve the cached GETs (/v1/trending, /v1/topics, /v1/top-videos) without net/http's per-request machinery, the same responses at about two thirds of the CPU; false: net/http serves every request")
	return af
}

// config builds the API's configuration, serve's and up's alike: the flags over the defaults
// for lists of k items (api.DefaultConfigForK: --max-limit and --default-limit follow --k
// unless given), the served windows and topics lists, and the process's metrics registry. A
// setting that cannot work is a usage error naming its flag.
func (f *apiFlags) config(k int, ws windowset.Set, tcfg *topics.Config, a *app) (api.Config, error) {
	if k < 1 || k > api.HardMaxLimit {
		return api.Config{}, usagef("--k %d: use 1..%d", k, api.HardMaxLimit)
	}
	cfg, d := f.cfg, api.DefaultConfigForK(k)
	cfg.NoFastPath = !f.fastPath
	if !f.fs.Changed("max-limit") {
		cfg.MaxLimit = d.MaxLimit
	}
	if !f.fs.Changed("default-limit") {
		cfg.DefaultLimit = d.DefaultLimit
	}
	cfg.Windows, cfg.Topics = ws, apiLists(tcfg)
	cfg.Registerer, cfg.Gatherer = a.registry, a.registry
	if err := cfg.Validate(); err != nil {
		return cfg, usagef("%s", serveFlagNames(setting.Flags(err, serveFieldFlags).Error()))
	}
	return cfg, nil
}

// addServeStaleFlag adds --serve-stale-for, the API's readiness through a store outage.
func addServeStaleFlag(fs *pflag.FlagSet, d *time.Duration) {
	fs.DurationVar(d, "serve-stale-for", api.DefaultConfig().ServeStaleFor, "while the serving store is unreachable, /readyz stays 200 (its body says \"store\": \"unreachable\") and the API serves the lists it holds until the newest of them was loaded this long ago; then 503 (30s: out of the load balancer soon after the store goes away)")
}

// addListenFlag adds --listen, the API's address.
func addListenFlag(fs *pflag.FlagSet, addr *string, def string) {
	fs.StringVar(addr, "listen", def, "address of the API and dashboard, host:port")
}

// servingRoles are the roles of the serving side of a process, serve's or up's.
type servingRoles struct {
	api, ingest, review, salting, moderation role
}

// stages orders them for shutdown: the API drains first (requests in flight are answered),
// then the ingest refuses new events with 503 and flushes everything it answered 202 for to
// Kafka, then the review sync stops, then the hot set's sharing (writing what it detected).
func (p servingRoles) stages() []stage {
	out := []stage{{p.api}}
	for _, r := range []role{p.ingest, p.review, p.salting, p.moderation} {
		if r.run != nil {
			out = append(out, stage{r})
		}
	}
	return out
}

// mountIngest mounts POST /v1/events and POST /v1/views behind token and returns the ingest's
// role; salter (nil: none) salts hot items; maxFuture (maxFuture's form: 0 is no limit)
// refuses events the speed layer would send to the DLQ as future_ts.
func mountIngest(srv *api.Server, a *app, w ingest.Writer, token string, salter *salt.Salter, maxFuture time.Duration) (role, error) {
	cfg := ingest.DefaultConfig()
	cfg.Log, cfg.Registry, cfg.Salter, cfg.MaxFuture = a.log.With("part", "ingest"), a.registry, salter, maxFuture
	in, err := ingest.New(cfg, w)
	if err != nil {
		return role{}, err
	}
	if err := srv.Handle(api.ViewsRoute(in.Views(), token)); err != nil {
		return role{}, err
	}
	if err := srv.Handle(api.EventsRoute(in, token)); err != nil {
		return role{}, err
	}
	srv.ReportKafka(in.Kafka())
	return role{"ingest", in.Run}, nil
}

// serveFieldFlags names the flags of the api.Config fields reported by field (internal/setting).
var serveFieldFlags = map[string]string{"ServeStaleFor": "--serve-stale-for"}

// serveFlagNames rewrites Config.Validate's field wording into the flags to change.
func serveFlagNames(msg string) string {
	return strings.NewReplacer(
		"full refresh interval", "--full-refresh", "refresh interval", "--refresh", "hot span", "--hot-span",
		"version poll interval", "--version-poll", "max streams", "--max-streams", "stream heartbeat", "--stream-heartbeat",
		"stream write timeout", "--stream-write-timeout",
		"max limit", "--max-limit", "default limit", "--default-limit",
		"max age", "--max-age", "CORS origin", "--cors-origins", "read header timeout", "--read-header-timeout",
		"read timeout", "--read-timeout", "write timeout", "--write-timeout", "idle timeout", "--idle-timeout",
		"shutdown timeout", "--shutdown-timeout", "max header bytes", "--max-header-bytes",
		"retention", "--retain-hours, --retain-days, --retain-months", "\n", "; ",
	).Replace(msg)
}

// openStore opens the serving store named by spec: "bolt:PATH" for the embedded file store,
// "clickhouse://host:port/database" for the production ClickHouse table.
func openStore(spec string) (store.Store, error) {
	scheme, rest, ok := strings.Cut(spec, ":")
	switch {
	case ok && scheme == "bolt":
		if rest == "" {
			return nil, usagef("--store %q: give the file, as in bolt:./data/serving.db", spec)
		}
		if dir := filepath.Dir(rest); dir != "." {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("create serving store directory: %w", err)
			}
		}
		st, err := boltstore.Open(rest)
		if err != nil {
			return nil, err
		}
		return st, nil
	case ok && scheme == "clickhouse":
		return openClickHouseStore(spec) // storeopen.go
	default:
		return nil, usagef("--store %q: unknown store; use bolt:PATH (the embedded file store) or clickhouse://host:port/database", spec)
	}
}

// reviewSyncEvery is how often serve and the speed workers refresh their copy of the shared
// review queue, so serve's GET lists what the workers held lately; a decision is written
// through at once.
const reviewSyncEvery = 5 * time.Second

// mountSharedReview serves /v1/topics/review over the shared queue in the bucket
// (topicstore.ReviewKey): the workers merge their holds into it and read decisions back every
// publish tick, so a decision made here reaches every worker within a tick.
func mountSharedReview(ctx context.Context, a *app, srv *api.Server, s3f *s3Settings, token string) (role, error) {
	obj, err := objstore.New(ctx, s3f.config())
	if err != nil {
		return role{}, usageOf(err, nil)
	}
	review := topicrules.NewReview(0)
	// Decisions still sync while the API drains after the signal.
	sctx := context.WithoutCancel(ctx)
	sync := func() error { return topicstore.SyncReview(sctx, obj, topicstore.ReviewKey, review) }
	route := api.TopicsReviewRoute(review, token, sync)
	// A decision reads the shared queue first, so a topic a worker held since the last
	// background sync can be decided at once; the token is checked before that read.
	decide := api.ReviewHandler(review, time.Now, sync)
	route.Handler = api.RequireToken(token, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			if err := sync(); err != nil {
				a.log.Warn("review queue sync before a decision failed", "err", err)
			}
		}
		decide.ServeHTTP(w, r)
	}))
	if err := srv.Handle(route); err != nil {
		return role{}, err
	}
	a.log.Info("topics review enabled", "path", "/v1/topics/review", "s3", s3f.endpoint+"/"+s3f.bucket+"/"+topicstore.ReviewKey)
	return reviewSyncRole(obj, review, reviewSyncEvery, a), nil
}
