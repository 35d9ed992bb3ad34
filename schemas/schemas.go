// Package schemas is the single source of truth for the formats the system exchanges: the
// view event (event.schema.json), and, as they are added, the Parquet archive schema, the
// ClickHouse DDL and the HTTP API (openapi.yaml). Code that reads or writes a format has a
// test that checks it against the file here, so a change starts in this directory.
package schemas

import _ "embed"

// EventSchema is the JSON Schema (draft 2020-12) of one view event on the Kafka topic views,
// as decoded by model/event.Decode.
//
//go:embed event.schema.json
var EventSchema []byte
