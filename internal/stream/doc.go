// Package stream is trending's synthetic traffic: a reproducible stream of
// pre-summed view events with its exact ground truth, shared by the load
// generator (loadgen, which sends it to Kafka) and the speed layer's accuracy
// harness (speed/accuracy, which drives window partitions with it directly).
//
// # The stream
//
// A catalog of Items items, V1..VN, is viewed by Zipf's law: rank k gets a
// share proportional to k^-s (NewZipf; any s > 0). Rate views a second of
// event time are drawn; each lands on one of Servers video servers, and
// each server sends one event per item per second with the sum (pre-summing:
// docs/requirements.md), so a second has at most Rate events and a viral item on 500
// servers is at most 500 events a second however many views it gets.
// Viral items (ParseViral: "V42@+2m:30%:10m") take a share of all views for
// a while. A fraction Late of events have their time shifted back by LateBy,
// and a fraction Malformed of extra messages are garbage of every kind the
// decoder rejects (MalformedKinds), for the dead-letter path.
//
// The Generator does no I/O and reads no clock: the same Config (including
// Seed) gives the same records in the same order, so a failing test or
// benchmark reproduces from its seed.
//
// # Ground truth
//
// Truth counts the views of every item in every minute of event time,
// exactly, for the valid events it is given; Run gives it only what the
// writer acknowledged, so it is the truth of what reached the log. Range
// sums any span of whole minutes, which is what the accuracy harness
// (speed/accuracy) compares each window's list with. WriteTo writes it as
// JSON lines, one per minute (docs/accuracy.md), and ReadTruth reads them
// back.
//
// In detail (DESIGN.md's file map has the line): the generated stream: Zipf over a
// catalog, pre-summed per server and second, viral schedule, late and malformed events,
// servers in regions (`Config.Regions`, `--server-regions`: each event carries its
// server's), with its exact ground truth per minute (`Truth`, and each region's:
// `Truth.Region`) and the catalog's invented titles and thumbnail URLs (`meta.go`, the
// `--titles` CSV of merge, batch and up); no I/O, reproducible from its seed; shared by
// `loadgen` and the accuracy harness (`speed/accuracy`)
package stream
