package stream

import (
	"encoding/csv"
	"fmt"
	"io"
	"net/url"
	"strings"
)

// Display metadata for a generated catalog: every item gets a title made from its rank, so
// the same catalog always has the same titles, and a thumbnail URL from a template. The
// titles are invented phrases; they only make a demo's lists readable.

var (
	titleSubjects = []string{
		"Cat", "Grandma", "Drone", "Street chef", "Chess prodigy", "Tiny robot", "Jazz trio",
		"Marathon runner", "Old synthesizer", "Night train", "Beekeeper", "Skateboarder",
		"Violinist", "Volcano", "Rescue dog", "Speedrunner",
	}
	titleActions = []string{
		"learns to open", "reviews", "rebuilds", "races", "explains", "paints", "films",
		"plays", "fixes", "survives", "cooks", "tours", "remixes", "maps", "tests", "sketches",
	}
	titleObjects = []string{
		"the fridge", "energy drinks", "a 1972 amplifier", "the fjords", "a Kafka partition",
		"a tin roof in the rain", "the slowest laptop", "Osaka's night market", "a dial-up tone",
		"the northern lights", "a 40-year-old trap", "sourdough at 2 a.m.", "a tiny house",
		"the city marathon", "a swaying bridge", "every angle of the goal",
	}
)

// Title returns the display title of catalog rank k (1-based): a phrase chosen by the rank,
// with the rank appended so titles stay distinct across a large catalog.
func Title(rank int) string {
	r := uint64(rank) * 0x9E3779B97F4A7C15 // spread neighbouring ranks over the phrases
	s := titleSubjects[r>>60]
	a := titleActions[(r>>56)&15]
	o := titleObjects[(r>>52)&15]
	return fmt.Sprintf("%s %s %s (#%d)", s, a, o, rank)
}

// WriteMetadata writes the catalog's display metadata as CSV lines item_id,title,thumbnail_url
// with a header, the format --titles reads (merge, batch, up): every catalog item, then each viral
// item that is not one. thumbnail is a URL template in which {id} stands for the item id
// (path-escaped); empty writes no thumbnails.
func (g *Generator) WriteMetadata(w io.Writer, thumbnail string) error {
	cw := csv.NewWriter(w)
	if err := cw.Write([]string{"item_id", "title", "thumbnail_url"}); err != nil {
		return err
	}
	row := func(id, title string) error {
		thumb := ""
		if thumbnail != "" {
			thumb = strings.ReplaceAll(thumbnail, "{id}", url.PathEscape(id))
		}
		return cw.Write([]string{id, title, thumb})
	}
	seen := make(map[string]bool, len(g.cfg.Viral))
	for rank := 1; rank <= g.cfg.Items; rank++ {
		id := g.ItemID(rank)
		if len(g.cfg.Viral) > 0 {
			seen[id] = true
		}
		if err := row(id, Title(rank)); err != nil {
			return err
		}
	}
	for i, v := range g.cfg.Viral {
		if seen[v.Item] {
			continue
		}
		seen[v.Item] = true
		if err := row(v.Item, "Going viral: "+Title(g.cfg.Items+1+i)); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}
