package setting

import (
	"errors"
	"fmt"
	"testing"
)

func TestFlags(t *testing.T) {
	err := errors.Join(Invalid("K", "%d: use 1..10000", 0), fmt.Errorf("batch: %w", Invalid("AllowedLateness", "must not be negative")))
	if !errors.Is(err, ErrConfig) {
		t.Fatal("a setting error does not match ErrConfig")
	}
	got := Flags(err, map[string]string{"AllowedLateness": "--batch-lateness"})
	if want := "invalid setting: K: 0: use 1..10000; --batch-lateness: must not be negative"; got.Error() != want || !errors.Is(got, ErrConfig) {
		t.Fatalf("%q, want %q", got, want)
	}
	plain := errors.New("disk full")
	if Flags(plain, nil) != plain {
		t.Fatal("an error with no setting in it was rewritten")
	}
}
