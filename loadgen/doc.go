// Package loadgen is the load generator role: it sends a generated stream
// (internal/stream: pre-summed view events with their exact ground truth) to
// Kafka (`trending loadgen`, and `trending up` when it embeds a demo load).
//
// # Producing
//
// Run sends the stream through a Writer (eventlog.NewWriter's kafka-go
// writer), keyed by item id, paced by Speedup (event time runs that many
// times faster than the wall clock; 0 is unpaced), and on
// cancellation writes what it had generated and stops cleanly.
package loadgen
