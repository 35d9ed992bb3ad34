package plan_test

import (
	"fmt"

	"trending/speed/plan"
)

// The default scenario (docs/requirements.md): the hour and the day are exact, the month uses
// sketches.
func ExampleCompute() {
	p, err := plan.Compute(plan.DefaultInput())
	if err != nil {
		panic(err)
	}
	for _, w := range p.Windows {
		fmt.Printf("%-5s exact %-7s %s\n", w.Window, plan.FormatBytes(w.ExactBytes), w.Mode)
	}
	month, _ := p.Window("month")
	b := month.ErrorBound
	fmt.Printf("month sketches %s, %.0fx less; overcount <= %s at %s\n",
		plan.FormatBytes(month.SketchBytes), month.ExactToSketch, plan.FormatCount(b.Overcount), plan.FormatPercent(b.Probability))
	// Output:
	// hour  exact 7.5 GB  exact
	// day   exact 43.5 GB exact
	// month exact 250 GB  sketch
	// month sketches 10.8 GB, 23x less; overcount <= 48,607 at 99.3%
}
