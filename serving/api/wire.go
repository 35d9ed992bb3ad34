package api

import (
	"fmt"
	"time"
	"trending/model"
)

// ListResponse is the JSON body of GET /v1/trending (schemas/openapi.yaml, TrendingList). The
// server writes it from pre-encoded parts rendered from the field tables (fields.go, render.go);
// this type has the same fields in the same order (TestFieldTablesMatchWire) and lets clients
// and tests decode it.
type ListResponse struct {
	Window string `json:"window"`
	// Region is the region a list per region is of (region=eu; model.List's Group of the group
	// dimension region); absent on the list of all items.
	Region string    `json:"region,omitempty"`
	Start  time.Time `json:"start,omitzero"`
	End    time.Time `json:"end,omitzero"`
	// WindowStart and WindowEnd: live sliding and all-time lists only, the span of event time
	// the counts cover (WindowEnd is AsOf; the open minute is included); absent on calendar
	// and batch lists (model.List).
	WindowStart time.Time `json:"window_start,omitzero"`
	WindowEnd   time.Time `json:"window_end,omitzero"`
	AsOf        time.Time `json:"as_of"`
	// AgeSeconds is how old the list is at the time of the response: now minus as_of.
	AgeSeconds  int64        `json:"age_seconds"`
	Version     int64        `json:"version"`
	Source      model.Source `json:"source"`
	Status      model.Status `json:"status"` // live, provisional or exact
	Exact       bool         `json:"exact"`
	DroppedLate uint64       `json:"dropped_late"`
	// Incomplete is the JSON "partial": model.List.Incomplete.
	Incomplete      bool         `json:"partial"`
	StalePartitions []int        `json:"stale_partitions,omitempty"`
	ErrorBound      *model.Bound `json:"error_bound,omitempty"`
	// Baseline: topics lists only (model.Baseline).
	Baseline       *model.Baseline       `json:"baseline,omitempty"`
	ComputedAt     time.Time             `json:"computed_at"`
	Reconciliation *model.Reconciliation `json:"reconciliation,omitempty"`
	// Boundary and Cutoff: the all-time list only (model.List says what each means).
	Boundary time.Time `json:"boundary,omitzero"`
	Cutoff   uint64    `json:"cutoff,omitempty"`
	// HalfLifeSeconds: decayed lists only; their items rank by Score (model.List).
	HalfLifeSeconds int64 `json:"half_life_seconds,omitempty"`
	// Frequent and Guarantee: lists of a window counted in frequent mode only (model.List):
	// each item's views is a proven lower bound and views_upper a proven upper bound, and
	// Guarantee says, in words, what Cutoff proves: "no item with more than 1234 views is
	// missing".
	Frequent  bool           `json:"frequent,omitempty"`
	Guarantee string         `json:"guarantee,omitempty"`
	Items     []ItemResponse `json:"items"`
}

// Guarantee is a frequent list's guarantee in words.
func Guarantee(cutoff uint64) string {
	return fmt.Sprintf("no item with more than %d views is missing", cutoff)
}

// ItemResponse is one ranked item as clients decode it: itemFields (fields.go) as a Go type.
// Title is always present (empty when unknown) so clients need not special-case it.
type ItemResponse struct {
	Rank   int    `json:"rank"`
	ItemID string `json:"item_id"`
	Title  string `json:"title"`
	// ThumbnailURL is the item's image, absolute or relative to the API; absent when unknown.
	ThumbnailURL string `json:"thumbnail_url,omitempty"`
	Views        uint64 `json:"views"`
	Exact        bool   `json:"exact"`
	// ViewsUpper: frequent lists only, the most views the item can have (views the least).
	ViewsUpper uint64 `json:"views_upper,omitempty"`
	// Score is what a decayed list (GET /v1/trending of a decayed window) or a topics list
	// ranks by; the topics fields after it are on GET /v1/topics only (model.Item says what
	// each means). Absent means zero or false.
	Score     float64 `json:"score,omitempty"`
	Expected  float64 `json:"expected,omitempty"`
	NewShare  float64 `json:"new_share,omitempty"`
	NoHistory bool    `json:"no_history,omitempty"`
	Review    bool    `json:"review,omitempty"`
}

// WindowsResponse is the JSON body of GET /v1/windows: the status of every calendar window of
// one kind whose start is in [from, to).
type WindowsResponse struct {
	Window string `json:"window"`
	// Region is the region whose lists these are (region=eu), absent for the lists of all
	// items.
	Region  string         `json:"region,omitempty"`
	From    time.Time      `json:"from"`
	To      time.Time      `json:"to"`
	Now     time.Time      `json:"now"`
	Windows []WindowStatus `json:"windows"`
	Counts  map[string]int `json:"counts"`
}

// Window statuses: the served list's model.Status, or missing.
const (
	StatusLive        = string(model.StatusLive)        // the speed layer's list of a window still open
	StatusProvisional = string(model.StatusProvisional) // the speed layer's final list; late events may be missing
	StatusExact       = string(model.StatusExact)       // the batch layer's exact list
	StatusMissing     = "missing"                       // nobody computed this window
)

// WindowStatus is one calendar window's state.
type WindowStatus struct {
	Start          time.Time             `json:"start"`
	End            time.Time             `json:"end"`
	Status         string                `json:"status"`
	Open           bool                  `json:"open"` // the window has not ended yet
	Source         model.Source          `json:"source,omitempty"`
	Version        int64                 `json:"version,omitempty"`
	AsOf           *time.Time            `json:"as_of,omitempty"`
	ComputedAt     *time.Time            `json:"computed_at,omitempty"`
	Items          int                   `json:"items"`
	Incomplete     bool                  `json:"partial"`
	DroppedLate    uint64                `json:"dropped_late"`
	Reconciliation *model.Reconciliation `json:"reconciliation,omitempty"`
}

// ErrorResponse is the body of every 4xx and 5xx: what went wrong and what is allowed.
type ErrorResponse struct {
	Error  string `json:"error"`
	Detail string `json:"detail"`
}

// ReadyResponse is the JSON body of a 200 from GET /readyz (schemas/openapi.yaml, Ready).
type ReadyResponse struct {
	Status      string    `json:"status"` // ready
	LastRefresh time.Time `json:"last_refresh"`
	Lists       int       `json:"lists"`
	// Store is StoreOK when the last refresh reached the store, else StoreUnreachable: the API
	// is still ready (it serves the lists it holds, loaded at LastRefresh) until they are
	// older than ServeStaleFor.
	Store             string    `json:"store"`
	StoreFailingSince time.Time `json:"store_failing_since,omitzero"` // the first failed refresh
	StoreError        string    `json:"store_error,omitempty"`        // the last refresh's error
	// Kafka is set only when the server ingests events (POST /v1/events): KafkaOK while the
	// ingest's last write reached Kafka, KafkaUnreachable from a failed one until one
	// succeeds. The API stays ready either way: reads do not touch Kafka, and POSTs are
	// accepted into the ingest's bounded buffer (503 once it is full) and written when the
	// brokers return.
	Kafka          string    `json:"kafka,omitempty"`
	KafkaDownSince time.Time `json:"kafka_down_since,omitzero"` // the first failed write of the outage
}

// The values of ReadyResponse.Kafka.
const (
	KafkaOK          = "ok"
	KafkaUnreachable = "unreachable"
)

// The values of ReadyResponse.Store.
const (
	StoreOK          = "ok"
	StoreUnreachable = "unreachable"
)
