package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"trending/internal/topicstore"

	"github.com/spf13/cobra"

	"trending/internal/objstore"
	"trending/model/topicrules"
	"trending/speed/plan"
	"trending/speed/topics"
)

func init() {
	subcommands = append(subcommands, newTopicsCmd)
}

// newTopicsCmd is `trending topics` (docs/topics.md). The counting lives in
// speed/topics; these subcommands are the operator's side of it (the review queue), its
// sizing, and a self-contained demo.
func newTopicsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "topics",
		Short: "Trending topics: regional surge lists, the review queue, sizing and a demo",
		Long: `Trending topics ranks topic mentions per region and worldwide by volume, by
surge, (current + 50) / (expected + 50) against the same clock hour of the last 7 days, or
by decayed counts. A user counts once per topic per 15 minutes, new accounts count 3 tenths,
banned terms are dropped, and a never-seen topic rising fast is held off public lists until
someone approves it here. See docs/topics.md.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newTopicsReviewCmd(), newTopicsPlanCmd(), newTopicsDemoCmd())
	return cmd
}

// newTopicsReviewCmd lists, approves and rejects held topics: in the shared queue in the
// S3 bucket (the speed workers' and serve's), or in a local queue file with --queue.
func newTopicsReviewCmd() *cobra.Command {
	var queue, by string
	var asJSON, all bool
	var s3f *s3Settings
	cmd := &cobra.Command{
		Use:   "review [list | approve TOPIC... | reject TOPIC...]",
		Short: "List held topics, or approve or reject them",
		Long: `review reads the review queue and lists the held topics or records decisions. By default
the queue is the shared one in the S3 bucket (topics/review.json, --s3-*): every speed worker
merges its held topics into it and reads decisions back each publish tick, and 'trending
serve --topics ... --token T' serves it at /v1/topics/review, so a decision made here reaches
every worker within a tick. Writes are conditional on the object's ETag, so a worker's
concurrent write is merged, never overwritten.

With --queue FILE it reads a local file instead (written by 'trending topics demo --queue'),
and writes decisions back atomically (a new file, then a rename).

Approved topics are listed on the next refresh; rejected ones stay off every list for 8 days.`,
		Example: `  trending topics review --s3-endpoint http://127.0.0.1:39000 --s3-bucket trending
  trending topics review approve quake --by alice
  trending topics review reject '#freemoney' --by alice
  trending topics review --queue data/topics-review.json`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			action := "list"
			if len(args) > 0 {
				action, args = args[0], args[1:]
			}
			where := "--queue " + queue
			var r *topicrules.Review
			var save func() error
			if queue != "" {
				var err error
				if r, err = readReviewQueue(queue); err != nil {
					return err
				}
				save = func() error { return writeReviewQueue(queue, r) }
			} else {
				obj, err := objstore.New(cmd.Context(), s3f.config())
				if err != nil {
					return usagef("%v", err)
				}
				where = s3f.endpoint + "/" + s3f.bucket + "/" + topicstore.ReviewKey
				r = topicrules.NewReview(0)
				if err := topicstore.SyncReview(cmd.Context(), obj, topicstore.ReviewKey, r); err != nil {
					return fmt.Errorf("review queue %s: %w", where, err)
				}
				save = func() error { return topicstore.SyncReview(cmd.Context(), obj, topicstore.ReviewKey, r) }
			}
			now := time.Now().UTC()
			switch action {
			case "list":
				if len(args) > 0 {
					return usagef("review list takes no topics")
				}
				status := topicrules.Pending
				if all {
					status = ""
				}
				return writeReview(cmd.OutOrStdout(), r.List(status), asJSON)
			case "approve", "reject":
				if len(args) == 0 {
					return usagef("review %s: name at least one topic", action)
				}
				if by == "" {
					by = os.Getenv("USER")
				}
				for _, t := range args {
					decide := r.Approve
					if action == "reject" {
						decide = r.Reject
					}
					if err := decide(t, by, now); err != nil {
						if errors.Is(err, topicrules.ErrNotHeld) {
							return usagef("%q is not in the review queue %s: 'trending topics review --all' lists it", t, where)
						}
						return err
					}
				}
				if err := save(); err != nil {
					return err
				}
				done := map[string]string{"approve": "approved", "reject": "rejected"}[action]
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", done, strings.Join(args, ", "))
				return nil
			default:
				return usagef("review %q: use list, approve or reject", action)
			}
		},
	}
	f := cmd.Flags()
	addQueueFlag(f, &queue, "a local review queue file (JSON, docs/topics.md) instead of the shared queue in S3")
	addByFlag(f, &by)
	addJSONFlag(f, &asJSON, "the list")
	addAllFlag(f, &all, "list decided topics too, not only pending ones")
	s3f = addS3Settings(f, "http://127.0.0.1:39000", "S3 API URL of the bucket holding the shared review queue (empty for AWS S3)")
	return cmd
}

// readReviewQueue reads the local review queue file --queue names (topicstore.ReadReviewFile);
// a missing file is a usage error.
func readReviewQueue(path string) (*topicrules.Review, error) {
	r, err := topicstore.ReadReviewFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, usagef("--queue %s: no such file", path)
	}
	return r, err
}

// writeReviewQueue replaces the file atomically (topicstore.WriteReviewFile).
func writeReviewQueue(path string, r *topicrules.Review) error {
	return topicstore.WriteReviewFile(path, r)
}

func writeReview(out io.Writer, held []topicrules.Held, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(held)
	}
	if len(held) == 0 {
		_, err := fmt.Fprintln(out, "no topics held")
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tSTATUS\tREASONS\tLISTS\tMENTIONS\tSCORE\tFIRST SEEN\tDECIDED BY")
	for _, h := range held {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%.0f\t%.3g\t%s\t%s\n", h.Topic, h.Status, strings.Join(h.Reasons, ","),
			strings.Join(h.Regions, ","), h.Mentions, h.Score, h.FirstSeen.Format(time.RFC3339), h.By)
	}
	return tw.Flush()
}

// newTopicsPlanCmd prints the trending-topics sizing of docs/topics.md. `trending plan
// --topics` can call writeTopicsSizing to print the same section.
func newTopicsPlanCmd() *cobra.Command {
	in := topics.DefaultSizingInput()
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "The trending-topics sizing: minute sketches, error per minute and window, baselines, dedupe",
		Example: `  # the figures of docs/topics.md (the defaults): 1.31 MB a minute, 79 MB for 60 minutes,
  # 1.35 mentions a minute
  trending topics plan

  # one key per event instead of two: half the error
  trending topics plan --keys-per-event 1`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := topics.ComputeSizing(in)
			if err != nil {
				return usagef("%v", err)
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				return enc.Encode(s)
			}
			return writeTopicsSizing(cmd.OutOrStdout(), s)
		},
	}
	f := cmd.Flags()
	addSketchShapeFlags(f, &in.Width, in.Width, "minute sketch columns", &in.Depth, "minute sketch rows", &in.CounterBytes, "bytes per sketch cell (ours are 8)")
	f.IntVar(&in.RingMinutes, "ring-minutes", in.RingMinutes, "minute sketches kept per worker")
	f.IntVar(&in.WindowMinutes, "window-minutes", in.WindowMinutes, "list window in minutes")
	f.Float64Var(&in.PeakEventsPerSecond, "peak-events-per-second", in.PeakEventsPerSecond, "one worker's peak mention rate")
	f.IntVar(&in.KeysPerEvent, "keys-per-event", in.KeysPerEvent, "keys each mention adds: region and worldwide")
	f.IntVar(&in.Workers, "workers", in.Workers, "workers (partitions)")
	f.IntVar(&in.BaselineDays, "baseline-days", in.BaselineDays, "days of same-hour baseline")
	f.IntVar(&in.Lists, "lists", in.Lists, "served lists (regions + worldwide)")
	addJSONFlag(f, &asJSON, "the sizing")
	return cmd
}

// writeTopicsSizing prints the trending-topics sizing arithmetic for people.
func writeTopicsSizing(out io.Writer, s topics.Sizing) error {
	in := s.Input
	ew := &errWriter{w: out}
	ew.printf("trending topics sizing (docs/topics.md): %d x %d sketch of %d-byte cells\n", in.Depth, in.Width, in.CounterBytes)
	ew.printf("minute sketch: %s; %d minute buckets: %s per worker (fixed: it does not grow with the number of topics)\n",
		plan.FormatBytes(s.MinuteSketchBytes), in.RingMinutes, plan.FormatBytes(s.RingBytes))
	ew.printf("counts: %g events/s x %d keys x 60 = %s a minute; each inflates another key by e/%d = %.3g, bound holds with %s\n",
		in.PeakEventsPerSecond, in.KeysPerEvent, plan.FormatCount(s.CountsPerMinute), in.Width, s.PerCountError, plan.FormatPercent(s.Probability))
	ew.printf("overcount: %.3g mentions a minute, %.3g over %d minutes (%.3g a minute with one key per event: the regional key doubles it)\n",
		s.OvercountMinute, s.OvercountWindow, in.WindowMinutes, s.SingleKeyOvercountMinute)
	ew.printf("a topic at the floor of %g may read %.0f; one at %g reads at most %s high\n",
		in.Floor, s.FloorReads, in.BigTopic, plan.FormatPercent(s.BigTopicError))
	ew.printf("baselines: %d workers x 24 h x %d days = %s hourly sketches, %s; bound %.3g mentions per window\n",
		in.Workers, in.BaselineDays, plan.FormatCount(float64(s.BaselineSketches)), plan.FormatBytes(s.BaselineBytes), s.BaselineOvercount)
	ew.printf("baselines in the object store: %s a day (%s PUTs, %s GETs); in memory %s per worker (%d same-hour sketches, the open and closing hours, a presence bitmap per hour)\n",
		plan.FormatBytes(s.BaselineStoreBytesPerDay), plan.FormatCount(float64(s.BaselinePutsPerDay)), plan.FormatCount(float64(s.BaselineGetsPerDay)),
		plan.FormatBytes(s.BaselineMemoryBytes), in.BaselineDays)
	ew.printf("dedupe: %s live (user, topic) pairs x %g B = %s per worker; lists: %d x %d topics = %s\n",
		plan.FormatCount(s.DedupePairs), in.PairBytes, plan.FormatBytes(s.DedupeBytes), in.Lists, in.ListSize, plan.FormatBytes(s.ListsBytes))
	return ew.err
}

// newTopicsDemoCmd runs a synthetic week of mentions through one partition's State and
// prints the lists: a surge in one region, a never-seen topic (held), a flood of junk tags
// from new accounts, a banned term.
func newTopicsDemoCmd() *cobra.Command {
	var (
		regions       []string
		perHour, junk int
		seed          int64
		surgeList     string
		queue         string
		approve       []string
		width         int
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Run a synthetic week of topic mentions through one partition and print the lists",
		Long: `demo builds 7 days of history at this clock hour (a Zipf mix of 2,000 topics over the
regions), then 15 minutes of now with: a marathon surging in the first region, a never-seen
"quake" rising fast, a flood of distinct junk tags from a few new accounts, and mentions of
a banned term. It prints every list, the held topics and the state's memory. With --queue
the review queue is written there for 'trending topics review'; --approve approves topics
before the lists are built.`,
		Example: `  trending topics demo
  trending topics demo --queue /tmp/review.json && trending topics review --queue /tmp/review.json
  trending topics demo --approve quake`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(regions) == 0 {
				return usagef("--regions: name at least one region")
			}
			if perHour < 1 || junk < 0 {
				return usagef("--per-hour must be positive and --junk not negative")
			}
			cfg := topics.DemoConfig(regions, width)
			if surgeList != "" {
				sc, err := topicrules.ParseScore(surgeList)
				if err != nil {
					return usagef("--world-score: %v", err)
				}
				cfg.Scores[topicrules.World] = sc
			}
			if err := cfg.Validate(); err != nil {
				return usagef("%v", err)
			}
			s, err := topics.New(cfg, topicrules.NewBlocklist(topics.DemoBanned))
			if err != nil {
				return err
			}
			now := time.Now().UTC().Truncate(time.Hour).Add(20 * time.Minute)
			topics.FeedDemo(s, regions, now, perHour, junk, uint64(seed))
			if len(approve) > 0 {
				s.Refresh(now) // queues the held topics so they can be approved
				for _, t := range approve {
					if err := s.Review().Approve(t, "demo", now); err != nil {
						return usagef("--approve %s: %v", t, err)
					}
				}
			}
			lists := s.Refresh(now)
			out := cmd.OutOrStdout()
			ew := &errWriter{w: out}
			st, ds := s.Stats(), s.DedupeStats()
			ew.printf("counted %d mentions (blocked %d, duplicates %d, late %d); dedupe evicted %d; state %s, window error bound %.1f mentions\n\n",
				st.Counted, st.Blocked, st.Duplicates, st.Late, ds.Evicted, plan.FormatBytes(float64(s.Bytes())), s.ErrorBound())
			for _, name := range s.Lists() {
				ew.printf("%s (%s):\n", name, s.Config().Scores[name])
				tw := tabwriter.NewWriter(ew, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "  #\tTOPIC\tMENTIONS\tEXPECTED\tSCORE\tNEW SHARE\tFLAGS")
				for i, r := range lists[name] {
					if i == 10 {
						break
					}
					flags := ""
					if r.Review {
						flags = "review"
					}
					fmt.Fprintf(tw, "  %d\t%s\t%.0f\t%.0f\t%.4g\t%s\t%s\n", i+1, r.Topic, r.Mentions, r.Expected, r.Score, plan.FormatPercent(r.NewShare), flags)
				}
				tw.Flush()
				ew.printf("\n")
			}
			ew.printf("held for review:\n")
			if err := writeReview(ew, s.Review().List(""), false); err != nil {
				return err
			}
			if ew.err != nil {
				return ew.err
			}
			if queue != "" {
				return writeReviewQueue(queue, s.Review())
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&regions, "regions", []string{"us", "jp", "de"}, "regions (each gets a surge list)")
	f.IntVar(&perHour, "per-hour", 20_000, "background mentions per hour of history")
	f.IntVar(&junk, "junk", 100_000, "distinct junk tags in the last 15 minutes")
	addSeedFlag(f, &seed, 1)
	addSketchShapeFlags(f, &width, 1<<16, "minute sketch width", nil, "", nil, "")
	f.StringVar(&surgeList, "world-score", "volume", "the worldwide list's score: volume, surge or decayed")
	addQueueFlag(f, &queue, "write the review queue to this local file (JSON, docs/topics.md)")
	f.StringSliceVar(&approve, "approve", nil, "topics to approve before the lists are built")
	return cmd
}
