package topics

import "fmt"

// Share tracks, for one candidate topic, the weight from new accounts and the total over
// the last Minutes minutes, in a ring of per-minute sums: its memory is fixed (24 bytes a
// minute) and a minute falls out exactly when it leaves the window. The zero value is not
// usable; call NewShare.
type Share struct {
	minute []int64 // the Unix minute each slot holds, or -1
	newW   []uint64
	total  []uint64
}

// NewShare returns an empty tracker over a window of the given minutes (>= 1).
func NewShare(minutes int) *Share {
	if minutes < 1 {
		panic(fmt.Sprintf("BUG: share window of %d minutes", minutes))
	}
	s := &Share{minute: make([]int64, minutes), newW: make([]uint64, minutes), total: make([]uint64, minutes)}
	for i := range s.minute {
		s.minute[i] = -1
	}
	return s
}

// Add records tenths of weight at minute, from a new account or not. A minute older than
// the ring holds is ignored.
func (s *Share) Add(minute int64, tenths uint64, newAccount bool) {
	n := int64(len(s.minute))
	i := minute % n
	if i < 0 {
		i += n
	}
	switch {
	case s.minute[i] == minute:
	case s.minute[i] < minute:
		s.minute[i], s.newW[i], s.total[i] = minute, 0, 0
	default:
		return // older than the slot's minute: out of the window
	}
	s.total[i] += tenths
	if newAccount {
		s.newW[i] += tenths
	}
}

// Value returns the new-account share of the weight in the window ending at minute now
// (inclusive), and the total weight in tenths. The share of an empty window is 0.
func (s *Share) Value(now int64) (share float64, total uint64) {
	var nw uint64
	n := int64(len(s.minute))
	for i, m := range s.minute {
		if m >= 0 && m <= now && m > now-n {
			nw += s.newW[i]
			total += s.total[i]
		}
	}
	if total == 0 {
		return 0, 0
	}
	return float64(nw) / float64(total), total
}
