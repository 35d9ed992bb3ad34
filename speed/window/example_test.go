package window_test

import (
	"fmt"
	"time"

	"trending/model"
	"trending/model/event"
	"trending/model/windowset"
	"trending/speed/window"
)

// A partition counts events by event time; a minute closes when the
// watermark (largest event time minus the allowed lateness) passes its end,
// and the lists are as of that minute.
func Example() {
	cfg := window.DefaultConfig()
	cfg.Windows = []window.WindowConfig{
		{Name: "hour", Kind: windowset.Sliding, Length: time.Hour, Bucket: time.Minute, Mode: windowset.Exact},
		{Name: "calendar-hour", Kind: windowset.Calendar, Span: model.Hour, Mode: windowset.Exact},
	}
	cfg.K, cfg.M = 2, 1
	p, err := window.New(cfg)
	if err != nil {
		panic(err)
	}
	at := time.Date(2026, 11, 14, 10, 5, 12, 0, time.UTC)
	for _, ev := range []event.Event{
		{ItemID: "V7", Count: 3, TS: at},
		{ItemID: "V2", Count: 2, TS: at.Add(time.Second)},
		{ItemID: "V7", Count: 1, TS: at.Add(2 * time.Second)},
		{ItemID: "V9", Count: 9, TS: at.Add(-2 * time.Hour)},  // before every window
		{ItemID: "V2", Count: 1, TS: at.Add(2 * time.Minute)}, // moves the watermark to 10:06:44
	} {
		fmt.Println(ev.ItemID, p.Add(ev))
	}
	l, _ := p.Top("hour")
	fmt.Println(l.Window, "as of", l.AsOf.Format("15:04"), l.Items, "total", l.Total)

	p.AdvanceTo(at.Add(56 * time.Minute)) // an idle partition: the calendar hour closes at 11:00
	for _, c := range p.TakeClosed() {
		fmt.Println(c.Window, c.Start.Format("15:04"), "-", c.End.Format("15:04"), c.Items, "final", c.Final)
	}
	// Output:
	// V7 counted
	// V2 counted
	// V7 counted
	// V9 too_late
	// V2 counted
	// hour as of 10:06 [{V7 4} {V2 2}] total 6
	// calendar-hour 10:00 - 11:00 [{V7 4} {V2 3}] final true
}
