// Command seed writes the demo lists (serving/api/demo) into a bolt serving store, for the
// serving benchmark (bench/run.sh) and for trying the API and dashboard without a pipeline:
//
//	go run ./serving/api/bench/seed -db ./data/serving.db && trending serve
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"trending/serving/api/demo"
	boltstore "trending/serving/store/bolt"
)

func main() {
	db := flag.String("db", "./data/serving.db", "bolt serving store file to write")
	flag.Parse()
	st, err := boltstore.Open(*db)
	if err == nil {
		err = demo.Seed(context.Background(), st, time.Now())
		err2 := st.Close()
		if err == nil {
			err = err2
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "seed: %v\n", err)
		os.Exit(1)
	}
}
