package accuracy

import "errors"

// ErrConfig means a Config was rejected; the message says what to change.
var ErrConfig = errors.New("accuracy: invalid config")
