package accuracy

import (
	"context"
	"testing"
	"time"
)

// TestFrequentVsCountMin runs the head to head at a small scale: the
// frequent-items guarantee is never broken on any item of the truth, its
// error stays within its stated bound, and at the same memory per bucket its
// recall is at least the count-min mode's.
func TestFrequentVsCountMin(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Views = 1_500_000
	cfg.Span = 2 * time.Hour
	cfg.Points = 2
	cfg.Window.Sketch.Width = 1 << 9
	cfg.Stream.Items = 200_000
	cfg.Stream.Seed = 3
	rep, err := RunFrequent(context.Background(), cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Capacity != 320 {
		t.Fatalf("capacity %d, want 2^9 x 5 x 8 / 64 = 320", rep.Capacity)
	}
	for _, r := range rep.Rows {
		t.Logf("%-5s %-4s %-9s kth %6d N %8d recall %.3f maxerr %6d bound %8.0f apriori %8.0f broken %d missing %d",
			r.Window, r.At, r.Mode, r.KthCount, r.N, r.Recall, r.MaxError, r.Bound, r.Apriori, r.Broken, r.MissingHeavy)
	}
	t.Logf("summary bytes %d, sketch bytes %d", rep.SummaryBytes, rep.SketchBytes)
	if miss := rep.Check(); len(miss) > 0 {
		t.Fatalf("goals missed: %v", miss)
	}
	if len(rep.Rows) != 8 {
		t.Fatalf("%d rows, want 2 windows x 2 points x 2 modes", len(rep.Rows))
	}
}
