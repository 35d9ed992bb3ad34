package window

import (
	"math/rand/v2"
	"testing"
	"time"

	trmodel "trending/model"
)

// TestSpansMatchModel: the partition's calendar periods are the model's (model.Align, Next),
// which the merger, the batch and the API use: an ISO week starting Monday 00:00 UTC.
func TestSpansMatchModel(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, span := range []string{SpanHour, SpanDay, SpanWeek, SpanMonth} {
		for range 2000 {
			m := r.Int64N(200*365*1440) - 50*365*1440 // 1920 to 2120
			start := spanStart(span, m)
			want := trmodel.Align(span, minuteTime(m))
			if !minuteTime(start).Equal(want) {
				t.Fatalf("%s of %s: start %s, want %s", span, minuteTime(m), minuteTime(start), want)
			}
			if end := minuteTime(spanEnd(span, start)); !end.Equal(trmodel.Next(span, want)) {
				t.Fatalf("%s of %s: end %s, want %s", span, minuteTime(m), end, trmodel.Next(span, want))
			}
		}
	}
	if got := minuteTime(spanStart(SpanWeek, time.Date(2026, 12, 6, 23, 59, 0, 0, time.UTC).Unix()/60)); got.Weekday() != time.Monday || got.Day() != 30 {
		t.Errorf("week of Sunday 2026-12-06 starts %s, want Monday 2026-11-30", got)
	}
}
