package window

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"trending/internal/itest"
	"trending/internal/objstore"
	"trending/speed/checkpoint"
)

// BenchmarkSeedScaleCheckpoint (issue 17) builds one partition at the seed's per-partition
// scale divided by TRENDING_BENCH_SCALE (default 8): 62,500/scale distinct items a minute,
// each item in 4 minutes of its hour (940,000/scale distinct an hour), consecutive hours
// sharing half their items, 24 hours of exact minute and hourly buckets, and the default
// windows' 33 sketches of 2^18 x 5 at full size (28 closed day buckets of the month window
// filled with random counts, the rest counted from the events). Each b.N iteration is one
// steady-state minute: a minute of events, then an incremental checkpoint to MinIO, with
// another goroutine counting events under the same lock all along; the closed calendar
// lists are taken every minute (the worker takes them at every publish, every second, so a
// checkpoint holds none). It reports the bytes written per checkpoint (and of them the
// manifest's) against the new minute's piece, the time the checkpoint holds
// the lock, the longest gap between two counted events, the checkpoint's wall time, then the
// restore from MinIO (load, parallel fetch, decode, re-sum) and the process's peak RSS; and,
// once, the whole (version 3) snapshot's size and marshal time as the baseline.
//
//	go test ./speed/window -run '^$' -bench SeedScale -benchtime 60x -count 1 -timeout 60m
func BenchmarkSeedScaleCheckpoint(b *testing.B) {
	s3 := itest.S3(b)
	if seedScale.p != nil {
		seedScale.run(b)
		return
	}
	scale := 8
	if v := os.Getenv("TRENDING_BENCH_SCALE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("TRENDING_BENCH_SCALE=%q: want a positive divisor", v)
		}
		scale = n
	}
	ctx := context.Background()
	oc := objstore.DefaultConfig()
	oc.Endpoint, oc.Bucket, oc.AccessKey, oc.SecretKey = s3.Endpoint, itest.Name(b, "seedscale"), s3.AccessKey, s3.SecretKey
	obj, err := objstore.New(ctx, oc)
	if err != nil {
		b.Fatal(err)
	}
	if err := obj.EnsureBucket(ctx); err != nil {
		b.Fatal(err)
	}

	perHour := 940_000 / scale
	cfg := DefaultConfig()
	p, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	day := time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC)
	start := day.Add(-12 * time.Hour)
	var buf []byte
	addMinute := func(p *Partition, m int) {
		h, k := m/60, m%60
		t := start.Add(time.Duration(m) * time.Minute)
		for j := k % 15; j < perHour; j += 15 {
			buf = strconv.AppendInt(append(buf[:0], 'v'), int64(h*perHour/2+j), 10)
			p.AddBytes(buf, uint32(1+j%5), t.Add(time.Duration(j%60)*time.Second).UnixMilli())
		}
	}
	built := time.Now()
	for m := range 24 * 60 {
		addMinute(p, m)
	}
	p.TakeClosed() // as the worker's publish does, every second
	p.TakeLate()
	// The month window's 28 oldest day buckets, as dense as a day of traffic makes them.
	w := p.byName["month"].(*sketchSliding)
	r := rand.New(rand.NewPCG(1, 2))
	var old []sbucket
	hs, ns := make([]uint64, 2_000_000), make([]uint64, 2_000_000)
	for d := 29; d >= 2; d-- {
		sk := p.newSketch()
		for i := range hs {
			hs[i], ns[i] = r.Uint64(), uint64(1+r.IntN(30))
		}
		sk.AddHashes(hs, ns)
		if err := w.running.Merge(sk); err != nil {
			b.Fatal(err)
		}
		p.skVer++
		old = append(old, sbucket{start: day.Add(-time.Duration(d)*24*time.Hour).Unix() / 60, sk: sk, ver: p.skVer})
	}
	w.buckets = append(old, w.buckets...)
	hs, ns = nil, nil
	st := p.Stats()
	b.Logf("built in %v: %d items, %d entries in closed buckets, %d sketches, ~%d MB (scale 1/%d)",
		time.Since(built).Round(time.Second), st.Items, st.Entries, st.Sketches, st.Bytes>>20, scale)

	// The baseline: the whole snapshot, as every checkpoint wrote it before.
	t := time.Now()
	whole, err := p.MarshalBinary()
	if err != nil {
		b.Fatal(err)
	}
	wholeSec, wholeMB := time.Since(t).Seconds(), float64(len(whole))/1e6
	whole = nil

	seedScale = seedScaleState{p: p, obj: obj, cfg: cfg, start: start, perHour: perHour, next: 24 * 60, wholeSec: wholeSec, wholeMB: wholeMB}
	seedScale.store = checkpoint.NewKeeper(obj, "checkpoints", 5, nil)
	seedScale.run(b)
}

// seedScale is the partition BenchmarkSeedScaleCheckpoint built, kept for the benchmark's
// later runs (the testing package calls it with b.N = 1 first): building it takes minutes.
var seedScale seedScaleState

type seedScaleState struct {
	p                 *Partition
	obj               *objstore.Client
	store             *checkpoint.Keeper
	cfg               Config
	start             time.Time
	perHour, next     int
	off               int64
	wholeSec, wholeMB float64
	first             bool
}

func (s *seedScaleState) run(b *testing.B) {
	ctx := context.Background()
	p, store, start, perHour := s.p, s.store, s.start, s.perHour
	var buf []byte
	var mu sync.Mutex
	var sketchBytes, manifestBytes int64
	save := func(off int64) (locked, total time.Duration, written int64) {
		t := time.Now()
		mu.Lock()
		snap, err := p.SnapshotIncremental()
		mu.Unlock()
		locked = time.Since(t)
		if err != nil {
			b.Fatal(err)
		}
		state, pieces, err := snap.Encode()
		if err != nil {
			b.Fatal(err)
		}
		cp := checkpoint.Checkpoint{Topic: "views", Partition: 0, Offset: off, CreatedAt: time.Now(), State: state}
		seen := map[string]bool{}
		for _, pc := range pieces {
			cp.Pieces = append(cp.Pieces, checkpoint.Piece{Name: pc.Name, Data: pc.Data})
			// Equal pieces (the calendar-month and all-time sketches are equal here: every
			// event is in this month) are stored once: count them once.
			if len(pc.Data) > 5 && pc.Data[5] == pieceSketch && !seen[pc.Name] {
				seen[pc.Name] = true
				sketchBytes += int64(len(pc.Data))
			}
		}
		_, ss, err := store.SaveWithStats(ctx, cp)
		if err != nil {
			b.Fatal(err)
		}
		manifestBytes += ss.ManifestBytes
		t2 := time.Now()
		mu.Lock()
		p.Stored(snap)
		mu.Unlock()
		locked = max(locked, time.Since(t2)) // the longer of the checkpoint's two lock holds
		return locked, time.Since(t), ss.ManifestBytes + ss.PieceBytes
	}
	if !s.first {
		t := time.Now()
		_, _, firstBytes := save(0)
		b.Logf("first checkpoint: %.1f MB in %.2f s", float64(firstBytes)/1e6, time.Since(t).Seconds())
		s.first = true
	}

	// A feeder counts events in the open minute under the lock, as the fetch loop does.
	stop := make(chan struct{})
	var maxGap, maxWait time.Duration
	var feederDone sync.WaitGroup
	feederDone.Add(1)
	next := s.next
	go func() {
		defer feederDone.Done()
		last := time.Now()
		var ib []byte
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			w0 := time.Now()
			mu.Lock()
			if d := time.Since(w0); d > maxWait {
				maxWait = d
			}
			ib = strconv.AppendInt(append(ib[:0], "live"...), int64(i%1000), 10)
			m := next
			p.AddBytes(ib, 1, start.Add(time.Duration(m)*time.Minute).UnixMilli())
			mu.Unlock()
			if now := time.Now(); now.Sub(last) > maxGap {
				maxGap = now.Sub(last)
			}
			last = time.Now()
			if i%64 == 0 {
				time.Sleep(50 * time.Microsecond) // leave the other core some room
			}
		}
	}()
	var lockedMax, lockedSum, totalSum time.Duration
	var bytesSum, minuteBytes int64
	sketchBytes, manifestBytes = 0, 0
	b.ResetTimer()
	for range b.N {
		mi := s.next
		s.next++
		mu.Lock()
		next = s.next
		mu.Unlock()
		// The minute's events, added under the lock in slices as the fetch loop would.
		h, k := mi/60, mi%60
		tm := start.Add(time.Duration(mi) * time.Minute)
		for j0 := k % 15; j0 < perHour; j0 += 15 * 256 {
			mu.Lock()
			for j := j0; j < min(perHour, j0+15*256); j += 15 {
				buf = strconv.AppendInt(append(buf[:0], 'v'), int64(h*perHour/2+j), 10)
				p.AddBytes(buf, uint32(1+j%5), tm.Add(time.Duration(j%60)*time.Second).UnixMilli())
			}
			mu.Unlock()
		}
		// The worker publishes every second, taking the closed calendar lists (and late
		// updates) each time: a checkpoint never carries more than a second's worth.
		mu.Lock()
		p.TakeClosed()
		p.TakeLate()
		mu.Unlock()
		s.off++
		locked, total, n := save(s.off)
		lockedSum += locked
		lockedMax = max(lockedMax, locked)
		totalSum += total
		bytesSum += n
		// One minute's new data: the newest closed minute encoded as its piece.
		mu.Lock()
		if nm := len(p.minutes); nm > 0 {
			f := p.minutes[nm-1]
			pp := pendingPiece{exact: true, start: f.start, ents: f.ents, strs: slices.Clone(p.in.strs)}
			mu.Unlock()
			if err := pp.encode(); err != nil {
				b.Fatal(err)
			}
			minuteBytes += int64(len(pp.data))
		} else {
			mu.Unlock()
		}
	}
	b.StopTimer()
	close(stop)
	feederDone.Wait()
	n := float64(b.N)
	b.ReportMetric(float64(bytesSum)/n/1e6, "MB/checkpoint")
	b.ReportMetric(float64(bytesSum)/float64(minuteBytes), "x-minute-data")
	b.ReportMetric(float64(sketchBytes)/n/1e6, "MB-sketches/checkpoint")
	b.ReportMetric(float64(manifestBytes)/n/1e6, "MB-manifest/checkpoint")
	b.ReportMetric(float64(minuteBytes)/n/1e6, "MB-minute-piece")
	// The feeder also waits for the minute's own events and for what closing a minute
	// (and an hour) does under the lock: not the checkpoint's doing, but the same stall.
	b.ReportMetric(maxWait.Seconds()*1e3, "ms-max-lock-wait")
	b.ReportMetric(lockedSum.Seconds()/n*1e3, "ms-locked/checkpoint")
	b.ReportMetric(lockedMax.Seconds()*1e3, "ms-locked-max")
	b.ReportMetric(maxGap.Seconds()*1e3, "ms-max-event-gap")
	b.ReportMetric(totalSum.Seconds()/n, "s/checkpoint")

	b.ReportMetric(s.wholeSec, "s/whole-marshal")
	b.ReportMetric(s.wholeMB, "MB/whole-snapshot")

	// Restore from MinIO with a fresh store, as a restarted worker does.
	s.p, p = nil, nil
	runtime.GC()
	t, cpu0 := time.Now(), cpuTime()
	var restored *Partition
	var decode time.Duration
	_, found, err := checkpoint.NewKeeper(s.obj, "checkpoints", 5, nil).Load(ctx, "views", 0, func(c checkpoint.Checkpoint) error {
		td := time.Now()
		pieces := make([]Piece, len(c.Pieces))
		for i, pc := range c.Pieces {
			pieces[i] = Piece{Name: pc.Name, Data: pc.Data}
		}
		var err error
		restored, err = RestoreIncremental(s.cfg, c.State, pieces)
		decode = time.Since(td)
		return err
	})
	if err != nil || !found {
		b.Fatalf("restore: found=%v %v", found, err)
	}
	if l, err := restored.Top("day"); err != nil || len(l.Items) == 0 {
		b.Fatalf("top: %v", err)
	}
	b.ReportMetric(time.Since(t).Seconds(), "s/restore")
	b.ReportMetric((cpuTime() - cpu0).Seconds(), "cpu-s/restore")
	b.ReportMetric(decode.Seconds(), "s/restore-decode")
	s.p = restored // later runs go on from the restored state, which is the same
	b.ReportMetric(float64(peakRSS())/1e9, "GB-peak-rss")
}

// cpuTime is the CPU time the process used so far (user + system): on a shared machine a
// load-independent measure of work, where wall time waits for the cores.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// peakRSS reads the process's peak resident set (VmHWM) in bytes; 0 if unknown.
func peakRSS() int64 {
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}
