package topk

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"
)

// TestScoreKeyOrder: ScoreKey orders scores as the floats do, so a count Heap fed keys ranks
// by score (ties by item), as CompareScored does.
func TestScoreKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	var es []Scored
	h := NewHeap(20)
	for i := range 500 {
		s := math.Ldexp(r.Float64(), r.IntN(200)-100)
		if i%7 == 0 {
			s = 0.5 // ties
		}
		e := Scored{Item: strconv.Itoa(i), Score: s}
		es = append(es, e)
		h.Offer(e.Item, ScoreKey(e.Score))
	}
	SortScored(es)
	var got []Scored
	for _, e := range h.Sorted() {
		got = append(got, Scored{e.Item, ScoreOf(e.Count)})
	}
	if !reflect.DeepEqual(got, es[:20]) {
		t.Fatalf("heap by ScoreKey\n%v\nwant\n%v", got, es[:20])
	}
}

// TestMergeScored: the merge of partitioned lists is the top k of their union; a duplicate
// keeps its larger score.
func TestMergeScored(t *testing.T) {
	a := []Scored{{"x", 3}, {"y", 1.5}}
	b := []Scored{{"z", 2}, {"y", 1.25}, {"w", 2}}
	got := MergeScored(3, a, b)
	want := []Scored{{"x", 3}, {"w", 2}, {"z", 2}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	if got := MergeScored(10, a, b); !slices.Contains(got, Scored{"y", 1.5}) || len(got) != 4 {
		t.Fatalf("duplicate: %v", got)
	}
	if MergeScored(0, a) != nil {
		t.Fatal("k 0 is not nil")
	}
}
