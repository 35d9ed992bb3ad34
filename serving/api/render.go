package api

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"trending/model"
)

// entry is one cached list with its JSON pre-encoded, so a read is a map lookup and a write.
//
// The body differs between requests only in the number of items (the limit) and in
// age_seconds, so the list-level fields and the items are encoded once when the list is
// loaded; a body for one (limit, second) is assembled from those parts at most once a second
// and reused by every request in that second, as is its gzip form. Arrow bodies, which carry no
// age, are encoded once per limit.
type entry struct {
	list model.List // items trimmed to the configured max limit
	tag  string     // identifies the list version: key, version, source, computed at
	// headA is `{"window":...,"as_of":"...","age_seconds":` (start, end, window_start and
	// window_end before as_of when set); headB runs from `,"version":` to
	// `"items":[`; items holds every item object, comma-separated, and ends[i] is the length of
	// the prefix holding the first i+1 of them.
	headA, headB, items []byte
	ends                []int

	bodies sync.Map // int (items served) -> *atomic.Pointer[rendered]

	// videos holds the GET /v1/top-videos objects of every item, comma-separated, and
	// videoEnds[i] the length of the prefix holding the first i+1 of them: encoded at the
	// first such read of this version (videosOnce), so a read of any k is one lookup and a
	// copy, as /v1/trending's (topvideos.go).
	videosOnce sync.Once
	videos     []byte
	videoEnds  []int
	arrow      sync.Map // int (items served) -> []byte

	// superseded is closed when the cache replaces this version or drops it (Cache.swap):
	// what a stream of the list waits on.
	superseded chan struct{}
}

// rendered is one assembled JSON body, valid for one second of age.
type rendered struct {
	sec int64
	raw []byte
	gz  atomic.Pointer[[]byte]
}

// newEntry pre-encodes l, trimmed to maxItems.
func newEntry(l model.List, maxItems int) *entry {
	if len(l.Items) > maxItems {
		l.Items = l.Items[:maxItems:maxItems]
	}
	e := &entry{list: l, tag: listTag(l), superseded: make(chan struct{})}

	// The list's fields before age_seconds make headA, those after it headB (listFields).
	fields, values := listValues(&l)
	head := []byte{'{'}
	for i, f := range fields {
		if i > 0 {
			head = append(head, ',')
		}
		head = append(head, '"')
		head = append(head, f.name...)
		head = append(head, '"', ':')
		if f.name == ageField {
			e.headA, head = head, []byte{}
			continue
		}
		v, err := json.Marshal(values[i])
		if err != nil {
			// Only NaN or Inf in the error bound can fail; the store's writers never produce them.
			panic(fmt.Sprintf("BUG: encode list %s: %s: %v", l.Key(), f.name, err))
		}
		head = append(head, v...)
	}
	e.headB = append(head, `,"items":[`...)

	e.ends = make([]int, len(l.Items))
	k := l.KindOf()
	var buf []byte
	for i := range l.Items {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendItemJSON(buf, &l.Items[i], k)
		e.ends[i] = len(buf)
	}
	e.items = bytes.Clone(buf) // exact size: the entry is cached
	return e
}

// listNames returns a list's "window" and "region" as responses show them: a list per region
// is its window and its region (the group dimension's value); any other list is its key's
// name (a topics list's "topics/eu/surge") without a region.
func listNames(l model.List) (window, region string) {
	if k := l.Key(); k.Group != "" && !k.IsTopics() {
		return l.Window, l.Group
	}
	return l.Key().Name(), ""
}

// listTag hashes what identifies one version of a list. It is stable across processes, so
// replicas behind one CDN give the same ETag for the same list.
func listTag(l model.List) string {
	h := fnv.New64a()
	var n [8]byte
	put := func(v int64) { binary.LittleEndian.PutUint64(n[:], uint64(v)); h.Write(n[:]) }
	h.Write([]byte(l.Key().Name()))
	put(l.Start.UnixNano())
	put(l.Version)
	h.Write([]byte(l.Source))
	put(l.ComputedAt.UnixNano())
	put(int64(len(l.Items)))
	h.Write([]byte(l.Fingerprint))
	h.Write([]byte(l.Status))
	put(int64(l.DroppedLate))
	return strconv.FormatUint(h.Sum64(), 36)
}

// served is how many items a request with limit gets.
func (e *entry) served(limit int) int { return min(limit, len(e.list.Items)) }

// json returns the body holding the first n items, as of now.
func (e *entry) json(n int, now time.Time) *rendered {
	sec := now.Unix()
	v, ok := e.bodies.Load(n)
	if !ok {
		v, _ = e.bodies.LoadOrStore(n, new(atomic.Pointer[rendered]))
	}
	slot := v.(*atomic.Pointer[rendered])
	if r := slot.Load(); r != nil && r.sec == sec {
		return r
	}
	// Two requests may build the same second's body at once; both results are equal.
	age := max(0, sec-e.list.AsOf.Unix())
	itemsLen := 0
	if n > 0 {
		itemsLen = e.ends[n-1]
	}
	raw := make([]byte, 0, len(e.headA)+20+len(e.headB)+itemsLen+2)
	raw = append(raw, e.headA...)
	raw = strconv.AppendInt(raw, age, 10)
	raw = append(raw, e.headB...)
	raw = append(raw, e.items[:itemsLen]...)
	raw = append(raw, ']', '}')
	r := &rendered{sec: sec, raw: raw}
	slot.Store(r)
	return r
}

// gzipped returns r's body compressed, compressing it once.
func (r *rendered) gzipped() []byte {
	if p := r.gz.Load(); p != nil {
		return *p
	}
	z := gzipBytes(r.raw)
	r.gz.Store(&z)
	return z
}

var gzipPool = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return w
}}

func gzipBytes(b []byte) []byte {
	var buf bytes.Buffer
	buf.Grow(len(b)/4 + 64)
	zw := gzipPool.Get().(*gzip.Writer)
	zw.Reset(&buf)
	zw.Write(b) // a bytes.Buffer never fails
	zw.Close()
	gzipPool.Put(zw)
	return buf.Bytes()
}

// arrowBody returns the Arrow IPC stream of the first n items, encoding it once.
func (e *entry) arrowBody(n int) []byte {
	if v, ok := e.arrow.Load(n); ok {
		return v.([]byte)
	}
	b, err := encodeArrow(e.list, n)
	if err != nil {
		panic("BUG: encode arrow: " + err.Error()) // in-memory writes cannot fail
	}
	v, _ := e.arrow.LoadOrStore(n, b)
	return v.([]byte)
}

// etag returns the entity tag of the representation: weak, because bodies of one list version
// differ in age_seconds from second to second, which changes nothing a client caches for.
func (e *entry) etag(n int, variant string) string {
	return `W/"` + e.tag + "-" + strconv.Itoa(n) + variant + `"`
}

// approxBytes estimates the memory an entry holds, for the cache size gauge.
func (e *entry) approxBytes() int {
	n := len(e.headA) + len(e.headB) + len(e.items) + 8*len(e.ends) + 512
	for _, it := range e.list.Items {
		n += 64 + len(it.ItemID) + len(it.Title) + len(it.Thumbnail)
	}
	return n
}

// guarantee is a frequent list's Guarantee, "" on other lists. An incomplete list (a partition
// stale or missing) proves nothing about the items of the partitions it lacks.
func guarantee(l model.List) string {
	if l.KindOf() != model.ListFrequent {
		return ""
	}
	g := Guarantee(l.Cutoff)
	if l.Incomplete {
		g += " from the partitions that reported (stale_partitions lists the others)"
	}
	return g
}
