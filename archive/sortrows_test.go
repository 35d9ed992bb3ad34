package archive

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// stableSortRows is the definition sortRows must meet: a plain stable sort by (ts, offset).
func stableSortRows(rows []Row) {
	slices.SortStableFunc(rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(a.Offset, b.Offset))
	})
}

// TestSortRowsIsStableSort compares sortRows with slices.SortStableFunc by the same key on
// random rolls of many shapes: sorted, reversed, 95% and 50% in time order (the late rows
// up to a minute or an hour behind), all equal keys, few distinct keys (so stability
// shows: each row carries its input position in UserID), a far-future row first (the run
// ends at once, every other row is late), and plain random.
func TestSortRowsIsStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	type shape struct {
		name string
		gen  func(n int) []Row
	}
	inOrder := func(n int, lateOneIn int, lateBy int64) []Row {
		rows := make([]Row, n)
		for i := range rows {
			ts := int64(i) * 36
			if lateOneIn > 0 && rng.IntN(lateOneIn) == 0 {
				ts -= rng.Int64N(lateBy)
			}
			rows[i] = Row{TS: ts, Offset: 1000 + int64(i)}
		}
		return rows
	}
	shapes := []shape{
		{"sorted", func(n int) []Row { return inOrder(n, 0, 0) }},
		{"reversed", func(n int) []Row { r := inOrder(n, 0, 0); slices.Reverse(r); return r }},
		{"95%-sorted", func(n int) []Row { return inOrder(n, 20, 60_000) }},
		{"95%-sorted-hour-late", func(n int) []Row { return inOrder(n, 20, 3_600_000) }},
		{"50%-sorted", func(n int) []Row { return inOrder(n, 2, 60_000) }},
		{"same-ts", func(n int) []Row {
			rows := inOrder(n, 0, 0)
			for i := range rows {
				rows[i].TS = 5
			}
			rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
			return rows
		}},
		{"equal-keys", func(n int) []Row {
			rows := make([]Row, n)
			for i := range rows {
				rows[i] = Row{TS: rng.Int64N(3), Offset: rng.Int64N(3)}
			}
			return rows
		}},
		{"future-first", func(n int) []Row {
			r := inOrder(n, 20, 60_000)
			if n > 0 {
				r[0].TS = 1 << 50
			}
			return r
		}},
		{"random", func(n int) []Row {
			rows := make([]Row, n)
			for i := range rows {
				rows[i] = Row{TS: rng.Int64N(1_000), Offset: rng.Int64N(1_000_000)}
			}
			return rows
		}},
	}
	for _, sh := range shapes {
		for _, n := range []int{0, 1, 2, 3, 10, 100, 1000, 20_000} {
			for rep := range 5 {
				t.Run(fmt.Sprintf("%s/%d/%d", sh.name, n, rep), func(t *testing.T) {
					rows := sh.gen(n)
					for i := range rows {
						rows[i].UserID = fmt.Sprint(i) // the input position, to see stability
						rows[i].Count = uint32(i)
					}
					want := slices.Clone(rows)
					stableSortRows(want)
					sortRows(rows)
					if !slices.EqualFunc(rows, want, func(a, b Row) bool {
						return a.TS == b.TS && a.Offset == b.Offset && a.UserID == b.UserID && a.Count == b.Count
					}) {
						for i := range rows {
							if rows[i] != want[i] {
								t.Fatalf("row %d: got %+v, want %+v", i, rows[i], want[i])
							}
						}
					}
				})
			}
		}
	}
}

// TestSortRowsBenchRolls checks sortRows on the benchmark's rolls (Zipf items, regions,
// 5% late rows), whole rows compared.
func TestSortRowsBenchRolls(t *testing.T) {
	for _, n := range []int{10_000, 100_000} {
		rows := benchRows(n)
		want := slices.Clone(rows)
		stableSortRows(want)
		sortRows(rows)
		if !slices.Equal(rows, want) {
			t.Fatalf("%d rows: sortRows differs from a stable sort", n)
		}
	}
}
