package plan

import (
	"errors"
	"fmt"
)

// ErrInvalidInput is wrapped by every error Validate returns, so a caller can tell a bad
// input from a bug with errors.Is.
var ErrInvalidInput = errors.New("invalid capacity plan input")

// FieldError says which Input field is wrong and what to change. Reason may hold one %s per
// entry of Refs, the names of the other fields it compares against, so a command line can
// print its own flag names instead of Go field names (see Format).
type FieldError struct {
	Field  string // Go name of the Input field, e.g. "Partitions"
	Value  any    // the rejected value
	Reason string // what to change; %s verbs stand for Refs
	Refs   []string
}

// Error names fields as Go does: "Partitions 0: must be at least 1".
func (e *FieldError) Error() string { return e.Format(func(s string) string { return s }) }

// Format renders the error with name mapping each field name, e.g. to a flag such as
// "--partitions".
func (e *FieldError) Format(name func(field string) string) string {
	refs := make([]any, len(e.Refs))
	for i, r := range e.Refs {
		refs[i] = name(r)
	}
	return fmt.Sprintf("%s %v: %s", name(e.Field), e.Value, fmt.Sprintf(e.Reason, refs...))
}

// Unwrap makes errors.Is(err, ErrInvalidInput) true.
func (e *FieldError) Unwrap() error { return ErrInvalidInput }
