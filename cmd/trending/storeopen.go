package main

import (
	"context"
	"time"

	"trending/serving/store"
	chstore "trending/serving/store/clickhouse"
)

// openClickHouseStore opens the ClickHouse serving store of a --store
// clickhouse://host:port/database spec; `trending migrate` creates its table.
func openClickHouseStore(spec string) (store.Store, error) {
	o, err := chstore.ParseDSN(spec)
	if err != nil {
		return nil, usagef("--store %q: %v", spec, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return chstore.Open(ctx, o)
}
