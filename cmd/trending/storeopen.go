package main

import (
	"context"
	"time"

	"trending/serving/store"
)

// openClickHouseStore opens the ClickHouse serving store of a --store
// clickhouse://host:port/database spec; `trending migrate` creates its table.
func openClickHouseStore(spec string) (store.Store, error) {
	o, err := store.ParseClickHouseDSN(spec)
	if err != nil {
		return nil, usagef("--store %q: %v", spec, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return store.OpenClickHouse(ctx, o)
}
