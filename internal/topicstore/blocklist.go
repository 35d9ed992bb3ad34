package topicstore

import (
	"fmt"
	"os"
	"time"

	"trending/model/topicrules"
)

// OpenBlocklist loads the blocklist file at path (one term a line, topicrules.Blocklist), and
// its Reload reads the file again when its modification time or size changed. An empty path
// gives a list that blocks nothing. A file over topicrules.MaxBlocklistBytes is refused: a wrong
// path (a log, a dump) fails loudly instead of filling memory.
func OpenBlocklist(path string) (*topicrules.Blocklist, error) {
	if path == "" {
		return topicrules.NewBlocklist(), nil
	}
	f := &blocklistFile{path: path}
	return topicrules.NewBlocklistFrom(path, f.read)
}

// blocklistFile is a topicrules.BlocklistSource over a local file; the Blocklist serialises its
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
	if fi.Size() > topicrules.MaxBlocklistBytes {
		return nil, false, fmt.Errorf("blocklist %s: %d bytes, over the %d-byte limit: is this the right file?", f.path, fi.Size(), topicrules.MaxBlocklistBytes)
	}
	data, err := os.ReadFile(f.path)
	if err != nil {
		return nil, false, fmt.Errorf("blocklist %s: %w", f.path, err)
	}
	f.modTime, f.size = fi.ModTime(), fi.Size()
	return data, true, nil
}
