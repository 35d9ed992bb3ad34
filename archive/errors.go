package archive

import "errors"

var (
	// ErrBadObject is returned by the Reader for an object under the archive whose name or
	// contents break the layout (docs/format/parquet.md): a foreign .parquet name, or a row
	// outside the offset range its name states. Dedup relies on that range, so such an
	// object is refused rather than read.
	ErrBadObject = errors.New("object breaks the archive layout")
)
