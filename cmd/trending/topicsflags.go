package main

import (
	"fmt"
	"slices"
	"trending/internal/topicstore"

	"github.com/spf13/pflag"

	"trending/internal/setting"
	"trending/model/topicrules"
	"trending/speed/topics"
)

// topicsFlags are the trending-topics settings (docs/topics.md) shared by up, speed and serve:
// which regional lists exist and how they are scored. The speed workers count; the API only
// needs the list names and scores to validate ?region= and find the list.
type topicsFlags struct {
	regions, score, worldScore, blocklist string
	withBlocklist                         bool
	sketchWidth                           int
}

// addTopicsFlags adds --topics, --topics-score and --topics-world-score, and --blocklist and
// --topics-sketch-width (default width) when the command counts (speed, up).
func addTopicsFlags(fs *pflag.FlagSet, counts bool, width int) *topicsFlags {
	t := &topicsFlags{withBlocklist: counts, sketchWidth: width}
	fs.StringVar(&t.regions, "topics", "", "trending topics (docs/topics.md): the regional lists, comma separated, such as eu,us,jp (\"world\" alone: the worldwide list only); every event then counts as a mention of the topic item_id (default: off)")
	fs.StringVar(&t.score, "topics-score", string(topicrules.Surge), "score of the regional topics lists: surge, volume or decayed")
	fs.StringVar(&t.worldScore, "topics-world-score", string(topicrules.Volume), "score of the worldwide topics list: volume, surge or decayed")
	if counts {
		addBlocklistFlag(fs, &t.blocklist, "file of banned topic terms, one a line, reloaded every minute (needs --topics)")
		fs.IntVar(&t.sketchWidth, "topics-sketch-width", width, "topics minute sketch width (power of two; 65536 keeps a minute's overcount near 1.35 mentions at peak, about 78 MB per partition with the hourly baselines); the hourly sketches are as wide, saved to the object store, 7 same-hour ones loaded")
	}
	return t
}

// addBlocklistFlag adds --blocklist, the banned topic terms (speed and up count with it, the
// batch recomputes with it).
func addBlocklistFlag(fs *pflag.FlagSet, file *string, usage string) {
	fs.StringVar(file, "blocklist", "", usage)
}

// config returns the topics.Config the flags describe, or nil when --topics is not set.
func (t *topicsFlags) config() (*topics.Config, error) {
	if t.regions == "" {
		if t.blocklist != "" {
			return nil, usagef("--blocklist needs --topics")
		}
		return nil, nil
	}
	for flag, s := range map[string]string{"--topics-score": t.score, "--topics-world-score": t.worldScore} {
		if _, err := topicrules.ParseScore(s); err != nil {
			return nil, usagef("%s %q: use surge, volume or decayed", flag, s)
		}
	}
	cfg := topics.DefaultConfig()
	cfg.Regions = nil
	if t.withBlocklist {
		cfg.Width, cfg.BaselineWidth = t.sketchWidth, t.sketchWidth // the hours at the minute width: the expected count bounded like the window
	}
	cfg.Scores = map[string]topicrules.Score{topicrules.World: topicrules.Score(t.worldScore)}
	for _, r := range splitList(t.regions) {
		if r == topicrules.World || slices.Contains(cfg.Regions, r) {
			continue
		}
		cfg.Regions = append(cfg.Regions, r)
		cfg.Scores[r] = topicrules.Score(t.score)
	}
	if err := cfg.Validate(); err != nil {
		if len(setting.Errors(err)) > 0 {
			return nil, usageOf(err, map[string]string{"Width": "--topics-sketch-width"})
		}
		return nil, usagef("--topics %s: %v", t.regions, err)
	}
	return &cfg, nil
}

// openBlocklist opens --blocklist (nil when unset).
func (t *topicsFlags) openBlocklist() (*topicrules.Blocklist, error) {
	if t.blocklist == "" {
		return nil, nil
	}
	b, err := topicstore.OpenBlocklist(t.blocklist)
	if err != nil {
		return nil, usagef("--blocklist: %v", err)
	}
	return b, nil
}

// apiLists returns the API's view of cfg (serving/api.Config.Topics): each list's score.
func apiLists(cfg *topics.Config) map[string]string {
	if cfg == nil {
		return nil
	}
	out := map[string]string{}
	for _, name := range append([]string{topicrules.World}, cfg.Regions...) {
		s, err := topicrules.ParseScore(string(cfg.Scores[name]))
		if err != nil {
			panic(fmt.Sprintf("BUG: validated topics score %q rejected: %v", cfg.Scores[name], err))
		}
		out[name] = string(s)
	}
	return out
}
