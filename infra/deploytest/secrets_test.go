package deploytest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The secrets set in TestSecretsNeverLogged; none may appear in any output.
const (
	chPassword    = "ch-Pw-5e1f0c9b"
	inlinePw      = "inline-Pw-77aa01"
	kafkaPassword = "kafka-Pw-9d3e2a41"
	s3Secret      = "s3-Secret-4b6c8d"
	ingestToken   = "ingest-Tok-0f9e8d"
)

// TestSecretsNeverLogged runs the roles with every credential set (environment variables as
// the Secrets give them, and a password inside a DSN) at debug level, lets each run into the
// failures a misconfigured deployment meets (wrong password, SASL refused, TLS to a plaintext
// port), and greps everything it printed for the secrets. Where the real servers run (make
// test), it also checks that the credentials were really used: the server refused them.
func TestSecretsNeverLogged(t *testing.T) {
	chAddr := os.Getenv("TRENDING_IT_CLICKHOUSE")
	kafkaAddr := os.Getenv("TRENDING_IT_KAFKA")
	live := chAddr != "" && kafkaAddr != ""
	if !live {
		chAddr, kafkaAddr = "127.0.0.1:1", "127.0.0.1:1" // nothing listens: the error paths still log
	}
	env := []string{
		"TRENDING_CLICKHOUSE_PASSWORD=" + chPassword,
		"TRENDING_KAFKA_PASSWORD=" + kafkaPassword,
		"TRENDING_S3_SECRET_KEY=" + s3Secret,
		"TRENDING_INGEST_TOKEN=" + ingestToken,
		"TRENDING_LOG_LEVEL=debug",
		"TRENDING_METRICS_ADDR=",
	}
	dsn := "clickhouse://" + chAddr + "/trending_secrets_it"
	inline := "clickhouse://svc:" + inlinePw + "@" + chAddr + "/trending_secrets_it"
	kafkaSASL := []string{"--kafka", kafkaAddr, "--kafka-sasl", "scram-sha-512", "--kafka-user", "svc"}
	for _, c := range []struct {
		name  string
		args  []string
		proof string // with the real servers: shows the credential was used
	}{
		{"migrate", []string{"migrate", "--clickhouse", dsn}, "password"},
		{"migrate inline", []string{"migrate", "--clickhouse", inline}, "svc"},
		{"merge", append([]string{"merge", "--store", dsn}, kafkaSASL...), "SASL"},
		{"serve", append([]string{"serve", "--store", inline, "--listen", "127.0.0.1:0"}, kafkaSASL...), ""},
		{"serve bolt", append([]string{"serve", "--store", "bolt:" + t.TempDir() + "/s.db", "--listen", "127.0.0.1:0"}, kafkaSASL...), ""},
		{"speed", append([]string{"speed", "--s3-access-key", "AKIDEXAMPLE", "--s3-endpoint", "http://127.0.0.1:1"}, kafkaSASL...), "SASL"},
		{"archive", append([]string{"archive", "--s3-access-key", "AKIDEXAMPLE", "--s3-endpoint", "http://127.0.0.1:1"}, kafkaSASL...), "SASL"},
		{"batch nightly", []string{"batch", "nightly", "--clickhouse", dsn, "--store", inline, "--s3-access-key", "AKIDEXAMPLE", "--s3-endpoint", "http://127.0.0.1:1"}, ""},
		{"loadgen", append([]string{"loadgen", "--duration", "1s"}, kafkaSASL...), "SASL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := runFor(t, 4*time.Second, env, c.args...)
			if strings.TrimSpace(out) == "" {
				t.Fatalf("trending %s printed nothing: the check would prove nothing", strings.Join(c.args, " "))
			}
			for _, s := range []string{chPassword, inlinePw, kafkaPassword, s3Secret, ingestToken} {
				if strings.Contains(out, s) {
					t.Errorf("trending %s printed a secret (%s...):\n%s", strings.Join(c.args, " "), s[:6], out)
				}
			}
			if live && c.proof != "" && !strings.Contains(out, c.proof) {
				t.Errorf("trending %s: output lacks %q, so the credential may not have been used:\n%s", strings.Join(c.args, " "), c.proof, out)
			}
		})
	}
}

// runFor runs the binary with extra environment for at most d, then stops it as Kubernetes
// does (SIGTERM, then SIGKILL), and returns everything it printed.
func runFor(t *testing.T, d time.Duration, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	cmd := exec.CommandContext(ctx, trendingBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir()
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 5 * time.Second
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	_ = cmd.Run() // failing is expected: the point is what it printed on the way
	return buf.String()
}
