package archive

import (
	"cmp"
	"math"
	"slices"
)

// rowKey is the sort key of a row in a file, (ts, offset), with the row's position among the
// rows being sorted as the last tie-break: sorting keys with it is a stable sort of the rows.
type rowKey struct {
	ts, offset int64
	idx        int32
}

func compareRowKey(a, b rowKey) int {
	if c := cmp.Compare(a.ts, b.ts); c != 0 {
		return c
	}
	if c := cmp.Compare(a.offset, b.offset); c != 0 {
		return c
	}
	return cmp.Compare(a.idx, b.idx)
}

// rowLess reports whether a sorts before b by (ts, offset).
func rowLess(a, b *Row) bool {
	return a.TS < b.TS || a.TS == b.TS && a.Offset < b.Offset
}

// sortRows sorts rows in place by (ts, offset), stably: rows with equal keys keep their
// order. It is the order of a file (docs/format/parquet.md) and gives the same result as
// slices.SortStableFunc with that key, but it is built for how rolls arrive: in offset
// order, and nearly all (about 95%) in event-time order. A comparison sort moving the
// 96-byte rows was a quarter to a third of encoding's CPU; instead, one pass keeps the rows
// that continue the ascending run (compacted to the front) and copies the others, the late
// rows, aside; only the late rows' keys, 24 bytes each, are sorted; and one merge from the
// back puts every row in its place. A row moves at most twice, the run rows in blocks
// (memmove) between late rows; sorted input is only read. When the input is far from
// sorted (reversed, say), nearly every row is late and it amounts to a key sort of
// everything: still O(n log n) and correct.
//
// The merge is stable because every run row with a given key precedes, in the input,
// every late row with the same key: a row is late only when its key is below the run's
// last key, and the run's keys only grow, so a run row after it has a greater key.
func sortRows(rows []Row) {
	n := len(rows)
	if n < 2 {
		return
	}
	if n > math.MaxInt32 { // rowKey.idx; no roll is near this
		slices.SortStableFunc(rows, func(a, b Row) int {
			return cmp.Or(cmp.Compare(a.TS, b.TS), cmp.Compare(a.Offset, b.Offset))
		})
		return
	}
	// The run: the rows at or above the last run row's key, compacted to rows[:m] a block
	// (the rows between two late ones) at a time. The first row that breaks the run starts
	// the late set; sorted input never copies.
	m := 1
	for m < n && !rowLess(&rows[m], &rows[m-1]) {
		m++
	}
	if m == n {
		return
	}
	late := make([]Row, 0, n/16+1) // about 5% of a roll is late
	for i := m; i < n; {
		late = append(late, rows[i]) // rows[i] is below the run's last row
		i++
		start, last := i, &rows[m-1]
		for i < n && !rowLess(&rows[i], last) {
			last = &rows[i]
			i++
		}
		m += copy(rows[m:], rows[start:i])
	}
	keys := make([]rowKey, len(late))
	for j := range late {
		keys[j] = rowKey{ts: late[j].TS, offset: late[j].Offset, idx: int32(j)}
	}
	slices.SortFunc(keys, compareRowKey)
	// Merge rows[:m] and the sorted late rows into rows[:n] from the back, the greatest
	// late row first: the run rows above it move up as one block to just below rows[k:],
	// the part already in place, and the late row goes below them. The writes never reach
	// the unread run rows (k-i is the count of late rows left). On equal keys the late row
	// goes last (it came after, see above).
	i, k := m, n
	for j := len(keys) - 1; j >= 0; j-- {
		lk := &keys[j]
		s := i
		for s > 0 && (rows[s-1].TS > lk.ts || rows[s-1].TS == lk.ts && rows[s-1].Offset > lk.offset) {
			s--
		}
		k -= i - s
		copy(rows[k:], rows[s:i])
		i = s
		k--
		rows[k] = late[lk.idx]
	}
}
