package frequent_test

import (
	"fmt"

	"trending/speed/frequent"
)

// Two minute buckets merged into a window: every item's true count lies in
// [Lower, Upper], and no item with more than MaxError views is missing.
func Example() {
	a, _ := frequent.New(frequent.Config{Capacity: 2})
	b, _ := frequent.New(frequent.Config{Capacity: 2})
	for item, n := range map[string]uint64{"V1": 50, "V2": 30, "V3": 5} {
		a.AddString(item, n)
	}
	for item, n := range map[string]uint64{"V1": 40, "V4": 35, "V5": 2} {
		b.AddString(item, n)
	}
	if err := a.Merge(b); err != nil {
		panic(err)
	}
	a.Compact()
	for _, e := range a.Top(0) {
		fmt.Printf("%s in [%d, %d]\n", e.Item, e.Lower, e.Upper)
	}
	fmt.Printf("no item with more than %d views is missing (a priori at most %d)\n",
		a.MaxError(), frequent.AprioriBound(a.Capacity(), a.Total()))
	// Output:
	// V1 in [60, 90]
	// V4 in [5, 35]
	// no item with more than 30 views is missing (a priori at most 54)
}
