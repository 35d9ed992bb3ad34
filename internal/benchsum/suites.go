package main

// suite is one `go test -bench` command of BENCHMARKS.md, with the flags its rows were taken
// with (benchmarks whose iterations take seconds cannot share one -benchtime).
type suite struct {
	Pkg   string   // package directory, ./speed/sketch
	Bench string   // -bench pattern
	Args  []string // benchtime, count, cpu, timeout
	Env   []string // extra environment, KEY=VALUE
}

// suites is every benchmark BENCHMARKS.md cites, in the order of its sections. Those on the
// real servers skip (with a message) unless the TRENDING_IT_* variables are set.
var suites = []suite{
	// Speed core.
	{Pkg: "./speed/sketch", Bench: "^Benchmark(Add|AddHash|Estimate|Hash|Marshal|Merge|Subtract)$", Args: []string{"-benchtime", "300ms", "-count", "3"}},
	{Pkg: "./speed/sketch", Bench: "^BenchmarkAddMinute$", Args: []string{"-benchtime", "20x", "-count", "3"}},
	{Pkg: "./speed/frequent", Bench: "^Benchmark(Add|MergeWindow|WindowSlide)$", Args: []string{"-benchtime", "1s", "-count", "3"}},
	{Pkg: "./model/event", Bench: ".", Args: []string{"-benchtime", "300ms", "-count", "3"}},
	{Pkg: "./model/topk", Bench: ".", Args: []string{"-benchtime", "300ms", "-count", "3"}},
	{Pkg: "./speed/window", Bench: "^BenchmarkUpdate$", Args: []string{"-benchtime", "1s", "-count", "3"}},
	{Pkg: "./speed/window", Bench: "^BenchmarkBytesPerEntry$", Args: []string{"-benchtime", "1x"}},
	{Pkg: "./speed/window", Bench: "^Benchmark(Slide|SlideSketch|Snapshot|Top)$", Args: []string{"-benchtime", "5x", "-count", "3"}},
	{Pkg: "./speed/window", Bench: "^BenchmarkPublishCost$", Args: []string{"-benchtime", "1x", "-count", "3"}},
	{Pkg: "./speed/window", Bench: "^BenchmarkDecayedVsHour$", Args: []string{"-benchtime", "1x", "-count", "3"}},
	// Checkpoints at the seed's scale (MinIO), 1/8 of it.
	{Pkg: "./speed/window", Bench: "^BenchmarkSeedScaleCheckpoint$", Args: []string{"-benchtime", "60x", "-count", "1", "-timeout", "60m"}, Env: []string{"TRENDING_BENCH_SCALE=8"}},
	// Speed runtime (Kafka, MinIO).
	{Pkg: "./speed/worker", Bench: "^BenchmarkHandle$", Args: []string{"-benchtime", "5x", "-count", "3"}},
	{Pkg: "./speed/worker", Bench: "^BenchmarkConsume$", Args: []string{"-benchtime", "3x", "-count", "3", "-cpu", "1,2"}},
	{Pkg: "./speed/worker", Bench: "^BenchmarkRecovery$", Args: []string{"-benchtime", "1x", "-count", "3"}},
	{Pkg: "./speed/worker", Bench: "^BenchmarkFreshness$", Args: []string{"-benchtime", "1x", "-timeout", "30m"}},
	{Pkg: "./speed/worker", Bench: "^BenchmarkHotItem$", Args: []string{"-benchtime", "1x", "-count", "2", "-timeout", "30m"}},
	// Lists per region.
	{Pkg: "./speed/worker", Bench: "^BenchmarkGroupMemory$", Args: []string{"-benchtime", "1x", "-count", "3"}},
	{Pkg: "./speed/worker", Bench: "^BenchmarkHandleGroups$", Args: []string{"-benchtime", "3x", "-count", "6"}},
	{Pkg: "./cmd/trending", Bench: "^BenchmarkFreshnessEmbedded$", Args: []string{"-benchtime", "1x", "-timeout", "30m"}},
	// Archive.
	{Pkg: "./archive", Bench: "^Benchmark(Encode|EncodeBaseline|Read|SortRows)$", Args: []string{"-benchtime", "1s"}},
	{Pkg: "./archive", Bench: "^BenchmarkEncodeRatio$", Args: []string{"-benchtime", "40x", "-count", "3"}},
	// Batch layer (ClickHouse).
	{Pkg: "./batch", Bench: "^Benchmark(Load|Month)$", Args: []string{"-benchtime", "3x", "-count", "3"}},
	{Pkg: "./batch", Bench: "^BenchmarkLoadRatio$", Args: []string{"-benchtime", "5x", "-count", "3"}},
	{Pkg: "./batch", Bench: "^Benchmark(TopicsBuildHour|CountTopicHour)$", Args: []string{"-benchtime", "3x"}},
	// Serving API, in process (the HTTP comparison with nginx is serving/api/bench/run.sh).
	{Pkg: "./serving/api", Bench: "^Benchmark(TrendingHour|CacheMemory)$", Args: []string{"-benchtime", "300ms", "-count", "3"}},
	{Pkg: "./serving/api", Bench: "^BenchmarkStreamFanout$", Args: []string{"-benchtime", "50x", "-count", "1"}},
	// Scale-out: the merge at many partitions.
	{Pkg: "./speed/merge", Bench: "^BenchmarkMergeInterval$", Args: []string{"-benchtime", "10x"}},
	{Pkg: "./speed/merge", Bench: "^BenchmarkMergeOnly$", Args: []string{"-benchtime", "10x"}},
	{Pkg: "./speed/merge", Bench: "^BenchmarkMergeTwoLevels$", Args: []string{"-benchtime", "3x", "-count", "2"}},
	// Load generator, trending topics.
	{Pkg: "./internal/stream", Bench: ".", Args: []string{"-benchtime", "1s"}},
	{Pkg: "./speed/topics", Bench: ".", Args: []string{"-benchtime", "500ms"}},
}

// goal is one row of the summary: a metric of a benchmark (or the ratio of two), the goal it
// is held to, and what BENCHMARKS.md calls it.
type goal struct {
	What string
	// Pkg and Bench name the benchmark (without the -N GOMAXPROCS suffix); Metric is its
	// unit. With Over set, the row is Bench's Metric over Over's Metric (both in Pkg), each
	// the median of its runs.
	Pkg, Bench, Metric string
	Over               string
	// Procs: 1 takes the runs at GOMAXPROCS=1 (-cpu 1); 0 the runs at the most procs there.
	Procs int
	// AtLeast or AtMost is the goal (0: none, the row is informative).
	AtLeast, AtMost float64
	Unit            string // how to print the value: "x" for ratios, or a unit suffix
}

// goals are the rows with a goal in BENCHMARKS.md, issue 21's first.
var goals = []goal{
	{What: "speed worker, CPU-bound (GOMAXPROCS=1), vs a bare FetchMessage loop (CPU per event)", Pkg: "trending/speed/worker", Bench: "BenchmarkConsume", Procs: 1, Metric: "worker/fetchmessage_cpu", AtLeast: 0.9, Unit: "x"},
	{What: "speed worker, all cores, vs a bare FetchMessage loop (CPU per event)", Pkg: "trending/speed/worker", Bench: "BenchmarkConsume", Metric: "worker/fetchmessage_cpu", AtLeast: 0.8, Unit: "x"},
	{What: "speed worker, CPU-bound, vs a bare batch-read loop (the floor)", Pkg: "trending/speed/worker", Bench: "BenchmarkConsume", Procs: 1, Metric: "worker/batch_cpu", Unit: "x"},
	{What: "archive encode, 100k events, vs bare parquet-go (CPU)", Pkg: "trending/archive", Bench: "BenchmarkEncodeRatio/100000", Metric: "ours/base_cpu", AtLeast: 0.9, Unit: "x"},
	{What: "archive encode, 10k events, vs bare parquet-go (CPU)", Pkg: "trending/archive", Bench: "BenchmarkEncodeRatio/10000", Metric: "ours/base_cpu", AtLeast: 0.9, Unit: "x"},
	// The API's goal is held on CPU per request: on its own core a server's requests/s is the
	// inverse of it, while requests/s measured on a shared core move with whatever else runs
	// there (nginx's own p99 says how quiet the core was).
	{What: "API GET /v1/trending?window=hour&limit=100, one core: nginx's CPU per request over ours (its requests/s on a core of its own)", Pkg: apiPkg, Bench: "nginx", Over: "trending", Metric: "cpu-us/req", AtLeast: 0.7, Unit: "x"},
	{What: "bare net/http writing the same bytes: nginx's CPU per request over its (the floor of net/http)", Pkg: apiPkg, Bench: "nginx", Over: "bare", Metric: "cpu-us/req", Unit: "x"},
	{What: "API: bare net/http's CPU per request over ours", Pkg: apiPkg, Bench: "bare", Over: "trending", Metric: "cpu-us/req", Unit: "x"},
	{What: "API, requests/s vs nginx in the same round (moved by other work on the core)", Pkg: apiPkg, Bench: "trending", Over: "nginx", Metric: "req/s", Unit: "x"},
	{What: "API, p99 latency at 64 connections", Pkg: apiPkg, Bench: "trending", Metric: "p99-ms", AtMost: 5, Unit: " ms"},
	{What: "nginx, p99 latency at 64 connections, same rounds (how quiet the core was)", Pkg: apiPkg, Bench: "nginx", Metric: "p99-ms", Unit: " ms"},
	{What: "batch load of 2M rows into ClickHouse, vs the server's own Native rate", Pkg: "trending/batch", Bench: "BenchmarkLoadRatio", Metric: "ours/server", AtLeast: 0.7, Unit: "x"},
	{What: "count-min bulk add of a closed minute, 2^18 x 5, vs BoomFilters (wall clock)", Pkg: "trending/speed/sketch", Bench: "BenchmarkAddMinute/w=2^18/boom", Over: "BenchmarkAddMinute/w=2^18/bulk", Metric: "ns/key", AtLeast: 2, Unit: "x"},
	{What: "count-min Add, 2^18 x 5, vs BoomFilters", Pkg: "trending/speed/sketch", Bench: "BenchmarkAdd/w=2^18/boom", Over: "BenchmarkAdd/w=2^18/ours", Metric: "sec/op", AtLeast: 2, Unit: "x"},
	{What: "count-min Estimate, 2^18 x 5, vs BoomFilters", Pkg: "trending/speed/sketch", Bench: "BenchmarkEstimate/w=2^18/boom", Over: "BenchmarkEstimate/w=2^18/ours", Metric: "sec/op", AtLeast: 2, Unit: "x"},
	{What: "frequent-items Add, Zipf(1.1), 6,144 pairs, vs a Go port of DataSketches' Frequent Items update (parity: TestAddInterleaved)", Pkg: "trending/speed/frequent", Bench: "BenchmarkAdd/zipf/pairs=6144/datasketches-go", Over: "BenchmarkAdd/zipf/pairs=6144/ours", Metric: "sec/op", Unit: "x"},
	{What: "frequent-items Add, Zipf(1.1), 6,144 pairs, vs our count-min Add 2^18 x 5 (under 1: slower)", Pkg: "trending/speed/frequent", Bench: "BenchmarkAdd/zipf/count-min-2^18x5", Over: "BenchmarkAdd/zipf/pairs=6144/ours", Metric: "sec/op", Unit: "x"},
	{What: "frequent-items hour of 60 minute summaries merged, 6,144 pairs, vs the DataSketches port", Pkg: "trending/speed/frequent", Bench: "BenchmarkMergeWindow/pairs=6144/datasketches-go", Over: "BenchmarkMergeWindow/pairs=6144/ours", Metric: "sec/op", AtLeast: 1, Unit: "x"},
	{What: "frequent-items sliding day of 1,440 minute summaries, one slide and read: two-stacks vs re-merging", Pkg: "trending/speed/frequent", Bench: "BenchmarkWindowSlide/buckets=1440/remerge", Over: "BenchmarkWindowSlide/buckets=1440/two-stacks", Metric: "sec/op", AtLeast: 10, Unit: "x"},
	{What: "live lists: count + LiveAll every second vs count + Top every minute (CPU per event, paired runs)", Pkg: "trending/speed/window", Bench: "BenchmarkPublishCost/pair-1m-1s", Metric: "cpu-ratio", AtMost: 1.1, Unit: "x"},
	{What: "window updates, exact hour window, vs a bare map increment", Pkg: "trending/speed/window", Bench: "BenchmarkUpdate/exact-hour", Metric: "vs-map", AtLeast: 0.5, Unit: "x"},
	{What: "bytes per (minute, item) entry, exact hour ring", Pkg: "trending/speed/window", Bench: "BenchmarkBytesPerEntry/hour", Metric: "B/entry", AtMost: 40, Unit: " B"},
	{What: "checkpoint bytes against a minute's new data (S=8)", Pkg: "trending/speed/window", Bench: "BenchmarkSeedScaleCheckpoint", Metric: "x-minute-data", AtMost: 2, Unit: "x"},
	{What: "checkpoint lock hold, mean (S=8)", Pkg: "trending/speed/window", Bench: "BenchmarkSeedScaleCheckpoint", Metric: "ms-locked/checkpoint", AtMost: 50, Unit: " ms"},
	{What: "recovery of a 1M-item partition from MinIO", Pkg: "trending/speed/worker", Bench: "BenchmarkRecovery", Metric: "s/restore", AtMost: 10, Unit: " s"},
	{What: "freshness, produced to served, p99 (real Kafka)", Pkg: "trending/speed/worker", Bench: "BenchmarkFreshness/defaults", Metric: "p99-s", AtMost: 5, Unit: " s"},
	{What: "stream push to 1,000 clients, p99", Pkg: "trending/serving/api", Bench: "BenchmarkStreamFanout/clients=1000", Metric: "p99-ms", AtMost: 1000, Unit: " ms"},
}
