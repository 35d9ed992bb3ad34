package archive

import "testing"

func TestFaultHookParse(t *testing.T) {
	for _, tc := range []struct {
		v        string
		hook, ok bool
	}{
		{"", false, true},
		{"speed-something", false, true}, // another role's fault
		{"archive-after-upload", true, true},
		{"archive-after-upload:3", true, true},
		{"archive-after-upload:0", false, false},
		{"archive-after-upload:x", false, false},
		{"archive-after-uplaod", false, false},
	} {
		h, err := faultHook(tc.v)
		if (err == nil) != tc.ok || (h != nil) != tc.hook {
			t.Errorf("faultHook(%q) = hook %v, err %v; want hook %v, ok %v", tc.v, h != nil, err, tc.hook, tc.ok)
		}
	}
	// Rolls before the N-th pass through (the N-th would kill the test process).
	h, _ := faultHook("archive-after-upload:3")
	for i := range 2 {
		if err := h(0); err != nil {
			t.Fatalf("roll %d: %v", i+1, err)
		}
	}
}
