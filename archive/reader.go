package archive

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/parquet-go/parquet-go"

	"trending/internal/objstore"
)

// Reader reads the archive back, one event-time hour at a time: what the batch layer loads
// into ClickHouse. Every read is deduplicated by (kafka_partition, kafka_offset), so an
// event archived twice (a retried upload, a roll repeated after a crash between upload and
// commit) is seen once. A Reader is safe for concurrent use once configured.
type Reader struct {
	store *objstore.Client
	lay   layout
	// Partitions, when positive, is the topic's partition count; Complete then also
	// requires a progress marker from each of partitions 0..Partitions-1, so a partition
	// that never archived anything holds its hours open. Zero trusts the markers found.
	Partitions int
}

// NewReader returns a Reader of the archive under DefaultRoot in store's bucket.
func NewReader(store *objstore.Client) *Reader {
	return NewReaderAt(store, DefaultRoot)
}

// NewReaderAt returns a Reader of the archive under root (Config.Root of the archiver).
func NewReaderAt(store *objstore.Client, root string) *Reader {
	return &Reader{store: store, lay: layout{root: root}}
}

// ListHour returns the Parquet objects of the UTC hour containing hour, in key order.
// Objects that are not .parquet (a _SUCCESS file, say) are left out.
func (r *Reader) ListHour(ctx context.Context, hour time.Time) ([]objstore.Object, error) {
	objs, err := r.store.List(ctx, r.lay.hourPrefix(hour.UTC().Truncate(time.Hour)))
	if err != nil {
		return nil, fmt.Errorf("list archive hour %s: %w", hour.UTC().Truncate(time.Hour).Format(time.RFC3339), err)
	}
	return slices.DeleteFunc(objs, func(o objstore.Object) bool { return !strings.HasSuffix(o.Key, ".parquet") }), nil
}

// Fingerprint identifies the contents of an hour: the hex SHA-256 of its objects' sorted
// "key size etag" lines. Late data, a repeated roll or a deleted object changes it; reading
// the same objects again does not. The batch layer stores it with an hour's exact result
// and recomputes the hour when it changes. An empty hour has the fingerprint of no lines.
func (r *Reader) Fingerprint(ctx context.Context, hour time.Time) (string, error) {
	objs, err := r.ListHour(ctx, hour)
	if err != nil {
		return "", err
	}
	return fingerprint(objs), nil
}

func fingerprint(objs []objstore.Object) string {
	objs = slices.Clone(objs)
	slices.SortFunc(objs, func(a, b objstore.Object) int { return strings.Compare(a.Key, b.Key) })
	h := sha256.New()
	for _, o := range objs {
		fmt.Fprintf(h, "%s %d %s\n", o.Key, o.Size, o.ETag)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ReadHour calls fn once for every event of the hour containing hour, deduplicated by
// (partition, offset), object by object in (partition, first offset) order. Within an
// object rows come in event-time order. An error from fn stops the read and is returned.
//
// Dedup needs no memory per event. Every object holds all of one hour's events from one
// contiguous run of offsets first..last of one partition, as its name says. Reading a
// partition's objects by ascending first offset, an event at offset o <= the largest last
// offset read so far is in an earlier object that covered o, so it is skipped; the rest
// is new. Rows outside their object's stated range are refused (ErrBadObject) because the
// rule depends on it.
func (r *Reader) ReadHour(ctx context.Context, hour time.Time, fn func(Row) error) error {
	hour = hour.UTC().Truncate(time.Hour)
	objs, err := r.ListHour(ctx, hour)
	if err != nil {
		return err
	}
	type item struct {
		key string
		sp  span
	}
	items := make([]item, 0, len(objs))
	for _, o := range objs {
		sp, err := parseObjectName(o.Key)
		if err != nil {
			return err
		}
		items = append(items, item{o.Key, sp})
	}
	slices.SortFunc(items, func(a, b item) int {
		return cmp.Or(cmp.Compare(a.sp.Partition, b.sp.Partition), cmp.Compare(a.sp.First, b.sp.First), cmp.Compare(b.sp.Last, a.sp.Last))
	})
	from, to := hour.UnixMilli(), hour.Add(time.Hour).UnixMilli()
	covered := map[int32]int64{}
	for _, it := range items {
		upTo, seen := covered[it.sp.Partition]
		if seen && upTo >= it.sp.Last {
			continue // a retried or repeated roll wholly inside what was read
		}
		if !seen {
			upTo = -1
		}
		body, err := r.store.Get(ctx, it.key)
		if err != nil {
			return fmt.Errorf("read archive: %w", err)
		}
		err = readFile(body, func(row Row) error {
			if row.Partition != it.sp.Partition || row.Offset < it.sp.First || row.Offset > it.sp.Last || row.TS < from || row.TS >= to {
				return fmt.Errorf("%w: %s: row at partition %d offset %d, event time %s is outside what the name states",
					ErrBadObject, it.key, row.Partition, row.Offset, time.UnixMilli(row.TS).UTC().Format(time.RFC3339Nano))
			}
			if row.Offset <= upTo {
				return nil
			}
			return fn(row)
		})
		if err != nil {
			return err
		}
		covered[it.sp.Partition] = max(upTo, it.sp.Last)
	}
	return nil
}

// readFile decodes one Parquet file of the archive, in file order. Columns the file has
// and Row does not are ignored; optional columns Row has and the file does not read as
// their zero value: the evolution rule of docs/format/parquet.md.
func readFile(body []byte, fn func(Row) error) error {
	f, err := parquet.OpenFile(bytes.NewReader(body), int64(len(body)))
	if err != nil {
		return fmt.Errorf("%w: open parquet: %v", ErrBadObject, err)
	}
	pr := parquet.NewGenericReader[Row](f, viewsSchema)
	defer pr.Close()
	buf := make([]Row, 1024)
	for {
		n, err := pr.Read(buf)
		for _, row := range buf[:n] {
			if ferr := fn(row); ferr != nil {
				return ferr
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: read parquet: %v", ErrBadObject, err)
		}
	}
}

// Columns is one hour of the archive column by column, deduplicated: what the batch layer
// hands to a columnar insert. Every slice has Len() entries; index i of each is one event.
type Columns struct {
	ItemID    []string
	Count     []uint32
	TS        []int64 // event time, Unix milliseconds
	Region    []string
	Partition []int32
	Offset    []int64
	IngestTS  []int64 // Kafka record time, Unix milliseconds
}

// Len returns the number of events.
func (c *Columns) Len() int { return len(c.Offset) }

func (c *Columns) append(row Row) {
	c.ItemID = append(c.ItemID, row.ItemID)
	c.Count = append(c.Count, row.Count)
	c.TS = append(c.TS, row.TS)
	c.Region = append(c.Region, row.Region)
	c.Partition = append(c.Partition, row.Partition)
	c.Offset = append(c.Offset, row.Offset)
	c.IngestTS = append(c.IngestTS, row.IngestTS)
}

// ReadColumns reads the hour containing hour into columns, deduplicated as ReadHour.
func (r *Reader) ReadColumns(ctx context.Context, hour time.Time) (*Columns, error) {
	c := &Columns{}
	if err := r.ReadHour(ctx, hour, func(row Row) error { c.append(row); return nil }); err != nil {
		return nil, err
	}
	return c, nil
}

// Progress returns every partition's progress marker, by partition.
func (r *Reader) Progress(ctx context.Context) ([]Progress, error) {
	objs, err := r.store.List(ctx, r.lay.progressPrefix())
	if err != nil {
		return nil, fmt.Errorf("list archive progress: %w", err)
	}
	out := make([]Progress, 0, len(objs))
	for _, o := range objs {
		if !strings.HasSuffix(o.Key, ".json") {
			continue
		}
		b, err := r.store.Get(ctx, o.Key)
		if err != nil {
			return nil, fmt.Errorf("read archive progress: %w", err)
		}
		var p Progress
		if err := json.Unmarshal(b, &p); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrBadObject, o.Key, err)
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b Progress) int { return cmp.Compare(a.Partition, b.Partition) })
	return out, nil
}

// Manifest returns the topic manifest the archiver keeps (TopicManifest), or ErrNotFound
// wrapped when no archiver has written one yet.
func (r *Reader) Manifest(ctx context.Context) (TopicManifest, error) {
	b, err := r.store.Get(ctx, r.lay.manifestKey())
	if err != nil {
		return TopicManifest{}, fmt.Errorf("read the archive's topic manifest: %w", err)
	}
	var m TopicManifest
	if err := json.Unmarshal(b, &m); err != nil {
		return TopicManifest{}, fmt.Errorf("%w: %s: %v", ErrBadObject, r.lay.manifestKey(), err)
	}
	return m, nil
}

// Incomplete says why the hour containing hour is not yet closed in the archive, or ""
// when it is: every partition of the topic (as many as the archiver's topic manifest
// records from Kafka's metadata, or Reader.Partitions when that is more) has a progress
// marker whose progress (the later of its event-time watermark and the last time it was
// caught up) has passed the hour's end plus allowedLateness. No manifest, or a partition
// without a marker, keeps every hour open: a partition is never complete by omission.
//
// Completeness is a judgement, not a guarantee: an event later than allowedLateness is
// still archived, into its own hour, and changes that hour's Fingerprint, which is how a
// consumer of a closed hour learns that it must read it again.
func (r *Reader) Incomplete(ctx context.Context, hour time.Time, allowedLateness time.Duration) (string, error) {
	m, err := r.Manifest(ctx)
	if errors.Is(err, objstore.ErrNotFound) {
		if r.Partitions <= 0 {
			return "no archiver has recorded the topic's partition count yet (" + r.lay.manifestKey() + ")", nil
		}
	} else if err != nil {
		return "", err
	}
	progress, err := r.Progress(ctx)
	if err != nil {
		return "", err
	}
	return incomplete(progress, max(m.Partitions, r.Partitions), hour, allowedLateness), nil
}

// incomplete is Incomplete's rule over markers read: why not complete, or "".
func incomplete(progress []Progress, partitions int, hour time.Time, lateness time.Duration) string {
	need := hour.UTC().Truncate(time.Hour).Add(time.Hour + lateness)
	byPart := map[int32]Progress{}
	for _, p := range progress {
		byPart[p.Partition] = p
	}
	for i := range int32(max(partitions, 0)) {
		p, ok := byPart[i]
		if !ok {
			return fmt.Sprintf("partition %d of %d has no progress marker: its archiver has not archived anything yet", i, partitions)
		}
		if passed := p.passed(); passed.Before(need) {
			if passed.IsZero() {
				return fmt.Sprintf("partition %d has archived no event time yet (needs %s)", i, need.Format(time.RFC3339))
			}
			return fmt.Sprintf("partition %d is archived through %s, short of %s (the hour's end plus the lateness)",
				i, passed.Format(time.RFC3339), need.Format(time.RFC3339))
		}
	}
	if partitions <= 0 {
		return "the topic has no partitions"
	}
	return ""
}

// Dirty is one late-data marker found by Reader.Dirty: its key and the hour it names.
type Dirty struct {
	Key  string
	Hour time.Time
}

// Dirty lists the late-data markers (DirtyMark): hours that received events after their
// partition's progress had passed them, in key order. A batch recomputes each hour and
// then clears exactly the markers it listed (ClearDirty), so a marker written meanwhile
// stays for the next run.
func (r *Reader) Dirty(ctx context.Context) ([]Dirty, error) {
	objs, err := r.store.List(ctx, r.lay.dirtyPrefix())
	if err != nil {
		return nil, fmt.Errorf("list late-data markers: %w", err)
	}
	out := make([]Dirty, 0, len(objs))
	for _, o := range objs {
		h, ok := r.lay.dirtyHour(o.Key)
		if !ok {
			continue // not ours
		}
		out = append(out, Dirty{Key: o.Key, Hour: h})
	}
	return out, nil
}

// ClearDirty deletes late-data markers once their hours are recomputed.
func (r *Reader) ClearDirty(ctx context.Context, keys []string) error {
	if len(keys) == 0 {
		return nil
	}
	if err := r.store.Delete(ctx, keys...); err != nil {
		return fmt.Errorf("clear late-data markers: %w", err)
	}
	return nil
}
