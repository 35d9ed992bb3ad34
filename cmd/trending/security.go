package main

import (
	"net/url"
	"strings"

	"github.com/spf13/cobra"

	chstore "trending/serving/store/clickhouse"
)

// The Kafka TLS and SASL flags are part of the Kafka flag group (flags.go, addKafkaFlags).

// withClickHouseSecurity adds --clickhouse-user, --clickhouse-password, --clickhouse-tls and
// --clickhouse-ca to a command with a ClickHouse DSN flag (--store, --clickhouse) and folds
// them into those DSNs before it runs, so every connection the command opens authenticates
// and encrypts alike. A DSN is only ever logged through redactDSN.
func withClickHouseSecurity(cmd *cobra.Command) *cobra.Command {
	var user, password, ca string
	var secure bool
	fs := cmd.Flags()
	fs.StringVar(&user, "clickhouse-user", "", "ClickHouse user (empty: the DSN's, or the server's default user)")
	fs.StringVar(&password, "clickhouse-password", "", "ClickHouse password; set it as TRENDING_CLICKHOUSE_PASSWORD rather than on the command line")
	fs.BoolVar(&secure, "clickhouse-tls", false, "connect to ClickHouse over TLS (its secure native port, 9440 by default)")
	fs.StringVar(&ca, "clickhouse-ca", "", "PEM file of the CAs that sign ClickHouse's certificate (implies --clickhouse-tls)")
	chainPreRun(cmd, func(cmd *cobra.Command) error {
		if user == "" && password == "" && !secure && ca == "" {
			return nil
		}
		for _, name := range []string{"store", "clickhouse"} {
			f := cmd.Flags().Lookup(name)
			if f == nil {
				continue
			}
			dsn := f.Value.String()
			if dsn == "" || (name == "store" && !strings.HasPrefix(dsn, "clickhouse:")) {
				continue // no ClickHouse here (the Go-native engine, the bolt store)
			}
			if !strings.Contains(dsn, "://") {
				dsn = "clickhouse://" + dsn
			}
			if _, err := chstore.ParseDSN(dsn); err != nil {
				return usagef("--%s %s: %v", name, redactDSN(dsn), redactErr(err, dsn))
			}
			u, _ := url.Parse(dsn)
			if user != "" || password != "" {
				name := user
				if name == "" && u.User != nil {
					name = u.User.Username()
				}
				if name == "" {
					name = "default"
				}
				pw := password
				if pw == "" && u.User != nil {
					pw, _ = u.User.Password()
				}
				u.User = url.UserPassword(name, pw)
			}
			q := u.Query()
			if secure {
				q.Set("secure", "true")
			}
			if ca != "" {
				q.Set("ca", ca)
			}
			u.RawQuery = q.Encode()
			if err := f.Value.Set(u.String()); err != nil {
				return usagef("--%s: %v", name, err)
			}
		}
		return nil
	})
	return cmd
}

// chainPreRun runs fn before the command's own PreRunE, after the root has applied the
// configuration (flags, TRENDING_* environment, YAML file).
func chainPreRun(cmd *cobra.Command, fn func(*cobra.Command) error) {
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		if err := fn(c); err != nil {
			return err
		}
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}

// redactDSN hides the password of a clickhouse:// DSN, for logs and messages; anything else
// (bolt:PATH) comes back unchanged.
func redactDSN(spec string) string {
	if !strings.Contains(spec, "://") {
		return spec
	}
	u, err := url.Parse(spec)
	if err != nil {
		return "(unparsable DSN)"
	}
	return u.Redacted()
}

// redactErr returns err's message with the DSN replaced by its redacted form.
func redactErr(err error, dsn string) string {
	return strings.ReplaceAll(err.Error(), dsn, redactDSN(dsn))
}
