package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	chddl "trending/schemas/clickhouse"
	chstore "trending/serving/store/clickhouse"
)

func init() { subcommands = append(subcommands, newMigrateCommand) }

func newMigrateCommand() *cobra.Command {
	var dsn, cluster string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the ClickHouse tables (serving lists, batch rollups)",
		Long: `migrate applies the numbered DDL files of schemas/clickhouse (embedded in the binary) to
the database named in --clickhouse, creating the database if it is missing. The schema
version is recorded in <database>.schema_migrations, so a rerun applies nothing and a newer
binary applies only the files it adds. A database migrated by a newer trending is refused.

With --cluster NAME it applies the cluster variant (schemas/clickhouse/cluster) ON CLUSTER
NAME: the same tables, replicated (serving_lists and rollup_meta on every node, the rollups
sharded by item with Distributed tables for reads). NAME is a cluster of the servers'
remote_servers configuration, whose {shard} and {replica} macros must be set. A database is
migrated with one variant for good: mixing them is refused.`,
		Example: `  trending migrate
  trending migrate --clickhouse clickhouse://ch1.internal:9000/trending
  trending migrate --clickhouse clickhouse://ch1.internal:9000/trending --cluster trending`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := (chddl.Options{Cluster: cluster}).Validate(); err != nil {
				return usagef("--cluster: %v", err)
			}
			o, err := chstore.ParseDSN(dsn)
			if err != nil {
				return usagef("--clickhouse: %v", err)
			}
			conn, err := o.Conn(cmd.Context())
			if err != nil {
				return err
			}
			defer conn.Close()
			res, err := chddl.ApplyOptions(cmd.Context(), conn, o.Database, chddl.Options{Cluster: cluster})
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(res.Ran) == 0 {
				fmt.Fprintf(out, "clickhouse %s database %s: schema at version %d, nothing to do\n", o.Addr, o.Database, res.To)
				return nil
			}
			fmt.Fprintf(out, "clickhouse %s database %s: schema %d -> %d (applied %s)\n", o.Addr, o.Database, res.From, res.To, strings.Join(res.Ran, ", "))
			return nil
		},
	}
	cmd.Flags().StringVar(&cluster, "cluster", "", "apply the cluster DDL ON CLUSTER this name (replicated and distributed tables); empty: one server")
	addClickHouseFlag(cmd.Flags(), &dsn, "clickhouse://127.0.0.1:39100/trending", "ClickHouse native address and database, clickhouse://[user:password@]host:port/database")
	return withClickHouseSecurity(cmd)
}
