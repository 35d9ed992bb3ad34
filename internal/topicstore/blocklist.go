package topicstore

import (
	"fmt"
	"os"
	"time"

	rules "trending/model/topics"
)

// OpenBlocklist loads the blocklist file at path (one term a line, rules.Blocklist), and
// its Reload reads the file again when its modification time or size changed. An empty path
// gives a list that blocks nothing. A file over rules.MaxBlocklistBytes is refused: a wrong
// path (a log, a dump) fails loudly instead of filling memory.
func OpenBlocklist(path string) (*rules.Blocklist, error) {
	if path == "" {
		return rules.NewBlocklist(), nil
	}
	f := &blocklistFile{path: path}
	return rules.NewBlocklistFrom(path, f.read)
}

// blocklistFile is a rules.BlocklistSource over a local file; the Blocklist serialises its
// calls.
type blocklistFile struct {
	path    string
	modTime time.Time
	size    int64
}

func (f *blocklistFile) read() ([]byte, bool, error) {
	fi, err := os.Stat(f.path)
	if err != nil {
		return nil, false, fmt.Errorf("blocklist %s: %w", f.path, err)
	}
	if fi.ModTime().Equal(f.modTime) && fi.Size() == f.size && f.modTime != (time.Time{}) {
		return nil, false, nil
	}
	if fi.Size() > rules.MaxBlocklistBytes {
		return nil, false, fmt.Errorf("blocklist %s: %d bytes, over the %d-byte limit: is this the right file?", f.path, fi.Size(), rules.MaxBlocklistBytes)
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return nil, false, fmt.Errorf("blocklist %s: %w", f.path, err)
	}
	f.modTime, f.size = fi.ModTime(), fi.Size()
	return data, true, nil
}
