package main

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// entry is one ranked item of a top list: the order is count desc, then item asc, as
// trending ranks (model/topk) and as the Flink job's ROW_NUMBER orders ties.
type entry struct {
	Item  string
	Count uint64
}

func less(a, b entry) int {
	switch {
	case a.Count != b.Count:
		if a.Count > b.Count {
			return -1
		}
		return 1
	case a.Item < b.Item:
		return -1
	case a.Item > b.Item:
		return 1
	}
	return 0
}

// topK ranks counts and keeps the first k.
func topK(counts map[string]uint64, k int) []entry {
	out := make([]entry, 0, len(counts))
	for it, c := range counts {
		out = append(out, entry{it, c})
	}
	slices.SortFunc(out, less)
	if len(out) > k {
		out = out[:k]
	}
	return out
}

// diff says how two top lists differ, rank by rank; "" when equal. An empty list is never
// equal to anything: a comparison of two missing lists must not pass.
func diff(aName string, a []entry, bName string, b []entry) string {
	if len(a) == 0 || len(b) == 0 {
		return fmt.Sprintf("%s has %d entries, %s %d: nothing to compare", aName, len(a), bName, len(b))
	}
	var out []string
	if len(a) != len(b) {
		out = append(out, fmt.Sprintf("%s has %d entries, %s %d", aName, len(a), bName, len(b)))
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			out = append(out, fmt.Sprintf("rank %d: %s %s=%d, %s %s=%d", i+1, aName, a[i].Item, a[i].Count, bName, b[i].Item, b[i].Count))
		}
	}
	if len(out) > 5 {
		out = append(out[:5], fmt.Sprintf("... %d differences in all", len(out)))
	}
	return strings.Join(out, "; ")
}

// partial is the part of a speed worker's published list (model.Partial on the topic
// TOPIC.partials, JSON) this comparison reads. Decoded here rather than through the model so
// the benchmark reads the wire format as any consumer would.
type partial struct {
	Window    string    `json:"window"`
	Start     time.Time `json:"start"`
	Final     bool      `json:"final"`
	LateOnly  bool      `json:"late_only"`
	Partition int       `json:"partition"`
	Version   int64     `json:"version"`
	Exact     bool      `json:"exact"`
	Items     []entry   `json:"items"`
	Salted    []any     `json:"salted"`
}

// hourFinals collects, from the partials' messages, the newest final list of the calendar
// hour starting at hour for each partition.
type hourFinals struct {
	hour  time.Time
	lists map[int]partial
}

func newHourFinals(hour time.Time) *hourFinals {
	return &hourFinals{hour: hour, lists: map[int]partial{}}
}

// add reads one message of the partials topic.
func (h *hourFinals) add(value []byte) error {
	var p partial
	if err := json.Unmarshal(value, &p); err != nil {
		return fmt.Errorf("partial: %w", err)
	}
	if p.Window != "hour" || !p.Start.Equal(h.hour) || !p.Final || p.LateOnly {
		return nil
	}
	if len(p.Salted) > 0 {
		return fmt.Errorf("partition %d: salted items in the hour's list: the merge here does not sum them", p.Partition)
	}
	if old, ok := h.lists[p.Partition]; !ok || p.Version >= old.Version {
		h.lists[p.Partition] = p
	}
	return nil
}

// merge is the merger's exact merge of the per-partition lists: every item is counted on
// one partition, so the union ranked is the global list (each partition sends its top
// m*K >= K). It fails unless every partition sent an exact final list.
func (h *hourFinals) merge(partitions, k int) ([]entry, error) {
	counts := map[string]uint64{}
	for p := range partitions {
		l, ok := h.lists[p]
		if !ok {
			return nil, fmt.Errorf("no final list of the hour %s from partition %d (have %d of %d)", h.hour.Format(time.RFC3339), p, len(h.lists), partitions)
		}
		if !l.Exact {
			return nil, fmt.Errorf("partition %d's hour list is not exact", p)
		}
		for _, e := range l.Items {
			if _, dup := counts[e.Item]; dup {
				return nil, fmt.Errorf("item %s in the lists of two partitions", e.Item)
			}
			counts[e.Item] = e.Count
		}
	}
	return topK(counts, k), nil
}

// flinkWindow reads the Flink job's CSV (window_end,rank,item,count) and returns the rows of
// the window ending at end, in rank order; it checks the ranks run 1..n.
func flinkWindow(r io.Reader, end time.Time) ([]entry, error) {
	cr := csv.NewReader(bufio.NewReader(r))
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("flink csv: %w", err)
	}
	if strings.Join(head, ",") != "window_end,rank,item,count" {
		return nil, fmt.Errorf("flink csv: header %q", head)
	}
	byRank := map[int]entry{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("flink csv: %w", err)
		}
		t, err := time.Parse(time.RFC3339, rec[0])
		if err != nil {
			return nil, fmt.Errorf("flink csv: window_end %q: %w", rec[0], err)
		}
		if !t.Equal(end) {
			continue
		}
		rank, err1 := strconv.Atoi(rec[1])
		n, err2 := strconv.ParseUint(rec[3], 10, 64)
		if err1 != nil || err2 != nil || rank < 1 {
			return nil, fmt.Errorf("flink csv: row %q", rec)
		}
		if _, dup := byRank[rank]; dup {
			return nil, fmt.Errorf("flink csv: rank %d of window %s twice", rank, rec[0])
		}
		byRank[rank] = entry{rec[2], n}
	}
	out := make([]entry, len(byRank))
	for r, e := range byRank {
		if r > len(out) {
			return nil, fmt.Errorf("flink csv: window %s has rank %d but %d rows", end.Format(time.RFC3339), r, len(out))
		}
		out[r-1] = e
	}
	return out, nil
}

// truthHour sums loadgen's exact per-minute counts (--truth: JSON lines of minute and
// counts) over the hour starting at hour.
func truthHour(r io.Reader, hour time.Time) (map[string]uint64, error) {
	counts := map[string]uint64{}
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	for {
		var line struct {
			Minute time.Time         `json:"minute"`
			Counts map[string]uint64 `json:"counts"`
		}
		if err := dec.Decode(&line); err == io.EOF {
			break
		} else if err != nil {
			return nil, fmt.Errorf("truth: %w", err)
		}
		if line.Minute.Before(hour) || !line.Minute.Before(hour.Add(time.Hour)) {
			continue
		}
		for it, c := range line.Counts {
			counts[it] += c
		}
	}
	return counts, nil
}
