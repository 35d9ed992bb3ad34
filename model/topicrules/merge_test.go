package topicrules

import (
	"testing"
	"time"
)

// TestMergeCommutes: merging two queues in either order gives the same encoding.
func TestMergeCommutes(t *testing.T) {
	t0 := time.Date(2026, 11, 14, 10, 0, 0, 0, time.UTC)
	mk := func(f func(r *Review)) *Review { r := NewReview(0); f(r); return r }
	x := func(r *Review) {
		r.Hold("a", "us", ReasonNewTopic, t0, 5, 1)
		r.Hold("b", "jp", ReasonNewAccounts, t0.Add(time.Minute), 7, 2)
		_ = r.Approve("a", "alice", t0.Add(2*time.Minute))
	}
	y := func(r *Review) {
		r.Hold("a", "jp", ReasonNewAccounts, t0.Add(3*time.Minute), 9, 3)
		r.Hold("b", "jp", ReasonNewAccounts, t0.Add(time.Minute), 8, 1)
		_ = r.Reject("b", "bob", t0.Add(time.Minute))
		r.Hold("c", "world", ReasonNewTopic, t0, 1, 1)
	}
	xy, yx := mk(x), mk(y)
	xy.Merge(mk(y))
	yx.Merge(mk(x))
	bx, _ := xy.MarshalJSON()
	by, _ := yx.MarshalJSON()
	if string(bx) != string(by) {
		t.Fatalf("merge does not commute:\n%s\n%s", bx, by)
	}
	if s, _ := xy.Status("a"); s != Approved {
		t.Fatalf("a is %s, want approved (the only decision)", s)
	}
	if s, _ := xy.Status("b"); s != Rejected {
		t.Fatalf("b is %s, want rejected", s)
	}
}

// TestSharedReviewCorrupt: a corrupt shared object is an error and is not overwritten (it
