package archive

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Layout of the bucket (docs/format/parquet.md):
//
//	<root>/views/dt=YYYY-MM-DD/hour=HH/pPPPP-oFFFFFFFFFFFF-oLLLLLLLLLLLL.parquet
//	<root>/views/_progress/pPPPP.json
//	<root>/views/_topic.json
//	<root>/views/_dirty/dt=YYYY-MM-DD/hour=HH/pPPPP-oFFFFFFFFFFFF-oLLLLLLLLLLLL.json
//	<root>/quarantine/dt=YYYY-MM-DD/pPPPP-oFFFFFFFFFFFF-oLLLLLLLLLLLL.jsonl
//
// F and L are the first and last offset of the roll (inclusive), zero-padded to 12 digits
// so keys sort by offset; larger offsets simply widen the field. One roll writes one object
// per event-time hour it touched, all under the same name.

// DefaultRoot is the key prefix the archive lives under.
const DefaultRoot = "archive"

// layout builds and parses keys under one root.
type layout struct{ root string }

func (l layout) viewsPrefix() string { return l.root + "/views/" }

// hourPrefix is the folder of one event-time hour, with a trailing slash.
func (l layout) hourPrefix(hour time.Time) string {
	h := hour.UTC()
	return fmt.Sprintf("%sdt=%s/hour=%02d/", l.viewsPrefix(), h.Format(time.DateOnly), h.Hour())
}

func rangeName(partition int32, first, last int64) string {
	return fmt.Sprintf("p%04d-o%012d-o%012d", partition, first, last)
}

// objectKey names the Parquet object of one roll's events in one hour.
func (l layout) objectKey(hour time.Time, partition int32, first, last int64) string {
	return l.hourPrefix(hour) + rangeName(partition, first, last) + ".parquet"
}

// quarantineKey names the quarantine object of one roll; day is the ingest day of the roll's
// first invalid message (an invalid message may have no event time at all).
func (l layout) quarantineKey(day time.Time, partition int32, first, last int64) string {
	return fmt.Sprintf("%s/quarantine/dt=%s/%s.jsonl", l.root, day.UTC().Format(time.DateOnly), rangeName(partition, first, last))
}

func (l layout) progressPrefix() string { return l.viewsPrefix() + "_progress/" }

func (l layout) dirtyPrefix() string { return l.viewsPrefix() + "_dirty/" }

// dirtyKey is the late-data marker of one roll's events in one hour that the partition's
// progress had already passed (see Reader.Dirty).
func (l layout) dirtyKey(hour time.Time, partition int32, first, last int64) string {
	h := hour.UTC()
	return fmt.Sprintf("%sdt=%s/hour=%02d/%s.json", l.dirtyPrefix(), h.Format(time.DateOnly), h.Hour(), rangeName(partition, first, last))
}

// dirtyHour reads the hour back from a dirty marker's key.
func (l layout) dirtyHour(key string) (time.Time, bool) {
	rest, ok := strings.CutPrefix(key, l.dirtyPrefix())
	if !ok {
		return time.Time{}, false
	}
	var day string
	var hour int
	dt, hr, ok := strings.Cut(rest, "/")
	if !ok {
		return time.Time{}, false
	}
	if _, err := fmt.Sscanf(dt, "dt=%s", &day); err != nil {
		return time.Time{}, false
	}
	if _, err := fmt.Sscanf(hr, "hour=%02d/", &hour); err != nil || hour < 0 || hour > 23 {
		return time.Time{}, false
	}
	d, err := time.Parse(time.DateOnly, day)
	if err != nil {
		return time.Time{}, false
	}
	return d.Add(time.Duration(hour) * time.Hour), true
}

// manifestKey is the topic manifest (TopicManifest), beside the progress folder so a
// listing of markers never sees it.
func (l layout) manifestKey() string { return l.viewsPrefix() + "_topic.json" }

func (l layout) progressKey(partition int32) string {
	return fmt.Sprintf("%sp%04d.json", l.progressPrefix(), partition)
}

var objectName = regexp.MustCompile(`^p(\d{4,})-o(\d{12,})-o(\d{12,})\.parquet$`)

// span is the partition and inclusive offset range an object's name states.
type span struct {
	Partition   int32
	First, Last int64
}

// parseObjectName reads the span from an object key's last element.
func parseObjectName(key string) (span, error) {
	m := objectName.FindStringSubmatch(path.Base(key))
	if m == nil {
		return span{}, fmt.Errorf("%w: %s: name is not pPPPP-oFIRST-oLAST.parquet", ErrBadObject, key)
	}
	p, err1 := strconv.ParseInt(m[1], 10, 32)
	f, err2 := strconv.ParseInt(m[2], 10, 64)
	l, err3 := strconv.ParseInt(m[3], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || f > l {
		return span{}, fmt.Errorf("%w: %s: bad partition or offset range", ErrBadObject, key)
	}
	return span{Partition: int32(p), First: f, Last: l}, nil
}
