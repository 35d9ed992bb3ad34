// Package setting is how every package reports a setting that cannot work: by the name of
// its Config field, never by a command-line flag. The package does not know which command
// it runs under (`up` calls the batch's lateness --batch-lateness, `batch` calls it
// --lateness), so cmd/trending maps fields to the flags of the command being run, once,
// with Flags.
//
// In detail (DESIGN.md's file map has the line): how a package reports a setting that
// cannot work: by its Config field (`setting.Invalid`, `errors.Is(err,
// setting.ErrConfig)`); `cmd/trending` names the flag of the command being run for each
// field once (`fieldFlags`, `usageOf`), so `up` says `--batch-lateness` where `batch` says
// `--lateness`
package setting

import (
	"errors"
	"fmt"
	"strings"
)

// ErrConfig is what every setting error wraps: errors.Is(err, ErrConfig).
var ErrConfig = errors.New("invalid setting")

// Error is one setting that cannot work: the Config field and what is wrong with it.
type Error struct {
	Field   string // the Go field, such as "RollBytes" or "Window.K"
	Problem string // what is wrong and what to use instead, without the field's name
}

func (e *Error) Error() string { return e.Field + ": " + e.Problem }

// Unwrap makes every Error match ErrConfig.
func (e *Error) Unwrap() error { return ErrConfig }

// Invalid reports field's value as unusable.
func Invalid(field, format string, args ...any) error {
	return &Error{Field: field, Problem: fmt.Sprintf(format, args...)}
}

// Errors returns every *Error in err, which may be joined (errors.Join) or wrapped.
func Errors(err error) []*Error {
	var out []*Error
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		if e, ok := err.(*Error); ok {
			out = append(out, e)
			return
		}
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		}
	}
	walk(err)
	return out
}

// Flags rewrites err for a command line: each setting error whose field has a flag in
// flags reads "--flag: problem"; others keep their field name. An err with no setting
// error in it is returned as it is.
func Flags(err error, flags map[string]string) error {
	es := Errors(err)
	if len(es) == 0 {
		return err
	}
	lines := make([]string, len(es))
	for i, e := range es {
		name := e.Field
		if f, ok := flags[e.Field]; ok {
			name = f
		}
		lines[i] = name + ": " + e.Problem
	}
	return fmt.Errorf("%w: %s", ErrConfig, strings.Join(lines, "; "))
}
