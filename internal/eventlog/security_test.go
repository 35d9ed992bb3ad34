package eventlog

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/twmb/franz-go/pkg/kfake"
	xscram "github.com/xdg-go/scram"
)

// TestScramRFC7677 replays the SCRAM-SHA-256 exchange of RFC 7677 section 3 with its nonce
// through github.com/xdg-go/scram, the client kafka-go's sasl/scram (our Mechanism) runs: the
// client's messages must match byte for byte and the server's signature must verify.
func TestScramRFC7677(t *testing.T) {
	c, err := xscram.SHA256.NewClient("user", "pencil", "")
	if err != nil {
		t.Fatal(err)
	}
	conv := c.WithNonceGenerator(func() string { return "rOprNGfwEbeRWgbNEkqO" }).NewConversation()
	first, err := conv.Step("")
	if err != nil {
		t.Fatal(err)
	}
	if want := "n,,n=user,r=rOprNGfwEbeRWgbNEkqO"; first != want {
		t.Fatalf("client-first %q, want %q", first, want)
	}
	final, err := conv.Step("r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
	if err != nil {
		t.Fatalf("server-first: %v", err)
	}
	if want := "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="; final != want {
		t.Fatalf("client-final %q, want %q", final, want)
	}
	if _, err := conv.Step("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="); err != nil || !conv.Valid() {
		t.Fatalf("server-final: valid %v, %v", conv.Valid(), err)
	}
}

// TestScramRefusesBadServer: the mechanism our clients use refuses a server that does not
// extend the nonce, sends a bad salt or iteration count or an error, or proves it does not
// know the password.
func TestScramRefusesBadServer(t *testing.T) {
	m, err := Security{SASLMechanism: SASLScramSHA256, Username: "user", Password: "pencil"}.Mechanism()
	if err != nil {
		t.Fatal(err)
	}
	if m.Name() != "SCRAM-SHA-256" {
		t.Fatalf("mechanism %q", m.Name())
	}
	for _, c := range []struct{ name, first, final string }{
		{"nonce not extended", "r=xyz123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", ""},
		{"bad salt", "r=%s123,s=***,i=4096", ""},
		{"bad iterations", "r=%s123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=0", ""},
		{"too few iterations", "r=%s123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=16", ""},
		{"server error", "e=unknown-user", ""},
		{"wrong signature", "r=%s123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="},
		{"error at the end", "r=%s123,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096", "e=invalid-proof"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sess, first, err := m.Start(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			nonce := ""
			for _, kv := range strings.Split(string(first), ",") {
				if v, ok := strings.CutPrefix(kv, "r="); ok {
					nonce = v
				}
			}
			serverFirst := c.first
			if strings.Contains(serverFirst, "%s") {
				serverFirst = fmt.Sprintf(serverFirst, nonce)
			}
			_, _, err = sess.Next(context.Background(), []byte(serverFirst))
			if c.final == "" {
				if err == nil {
					t.Fatal("accepted")
				}
				return
			}
			if err != nil {
				t.Fatalf("first step: %v", err)
			}
			if _, _, err := sess.Next(context.Background(), []byte(c.final)); err == nil {
				t.Fatal("accepted a final message from a server that does not know the password")
			}
		})
	}
}

func TestSecurityValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		s    Security
		bad  string // substring of the error; empty: valid
	}{
		{"zero", Security{}, ""},
		{"tls", Security{TLS: true}, ""},
		{"ca implies tls", Security{CAFile: "ca.pem", SASLMechanism: "plain", Username: "u", Password: "p"}, ""},
		{"scram without tls", Security{SASLMechanism: "scram-sha-512", Username: "u", Password: "p"}, ""},
		{"plain without tls", Security{SASLMechanism: "plain", Username: "u", Password: "p"}, "clear text"},
		{"mechanism case", Security{TLS: true, SASLMechanism: "SCRAM-SHA-256", Username: "u", Password: "p"}, ""},
		{"no password", Security{TLS: true, SASLMechanism: "plain", Username: "u"}, "TRENDING_KAFKA_PASSWORD"},
		{"password without mechanism", Security{Password: "p"}, "without a SASL mechanism"},
		{"unknown mechanism", Security{SASLMechanism: "gssapi", Username: "u", Password: "p"}, "use plain, scram-sha-256"},
		{"half a key pair", Security{CertFile: "c.pem"}, "both"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.s.Validate()
			if c.bad == "" && err != nil {
				t.Fatalf("Validate: %v", err)
			}
			if c.bad != "" && (err == nil || !strings.Contains(err.Error(), c.bad)) {
				t.Fatalf("Validate: %v, want an error saying %q", err, c.bad)
			}
		})
	}
}

func TestSecurityStringRedacts(t *testing.T) {
	s := Security{TLS: true, SASLMechanism: "scram-sha-512", Username: "svc", Password: "hunter2-secret"}
	if got := s.String(); strings.Contains(got, "hunter2") || !strings.Contains(got, "user=svc") {
		t.Fatalf("String() = %q: want the user and never the password", got)
	}
}

func TestClientLeavesKafkaGoDefaults(t *testing.T) {
	d, tr := kafka.DefaultDialer, kafka.DefaultTransport
	c, err := NewClient([]string{"127.0.0.1:1"}, Security{TLS: true, SASLMechanism: SASLScramSHA256, Username: "u", Password: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if kafka.DefaultDialer != d || kafka.DefaultTransport != tr {
		t.Fatal("NewClient changed kafka-go's package defaults")
	}
	if c.Dialer().TLS == nil || c.Dialer().SASLMechanism == nil || c.Transport().TLS == nil || c.Transport().SASL == nil {
		t.Fatal("the client's dialer or transport lacks its TLS or SASL")
	}
	if _, err := NewClient([]string{"127.0.0.1:1"}, Security{Password: "x"}); err == nil {
		t.Fatal("NewClient accepted an invalid Security")
	}
	if _, err := NewClient(nil, Security{}); err == nil {
		t.Fatal("NewClient accepted no brokers")
	}
}

// TestSecurityAgainstBroker runs the Dialer and Transport against an in-process broker that
// requires TLS and SASL, for every mechanism: topics are created and a message is written
// and read back; a wrong password and a missing CA are refused.
func TestSecurityAgainstBroker(t *testing.T) {
	dir := t.TempDir()
	serverTLS, caFile := selfSigned(t, dir)
	for _, mech := range []struct{ ours, kfake string }{
		{SASLPlain, "PLAIN"}, {SASLScramSHA256, "SCRAM-SHA-256"}, {SASLScramSHA512, "SCRAM-SHA-512"},
	} {
		t.Run(mech.ours, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser(mech.kfake, "svc", "s3cr3t-pw"), kfake.TLS(serverTLS))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			addr := c.ListenAddrs()[0]
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()

			good := Security{TLS: true, CAFile: caFile, SASLMechanism: mech.ours, Username: "svc", Password: "s3cr3t-pw"}
			d, err := good.Dialer()
			if err != nil {
				t.Fatal(err)
			}
			conn, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				t.Fatalf("dial with TLS and SASL %s: %v", mech.ours, err)
			}
			if err := conn.CreateTopics(kafka.TopicConfig{Topic: "sec", NumPartitions: 1, ReplicationFactor: 1}); err != nil {
				t.Fatalf("create topic: %v", err)
			}
			conn.Close()

			tr, err := good.Transport()
			if err != nil {
				t.Fatal(err)
			}
			w := &kafka.Writer{Addr: kafka.TCP(addr), Topic: "sec", Transport: tr, BatchTimeout: time.Millisecond}
			if err := w.WriteMessages(ctx, kafka.Message{Key: []byte("k"), Value: []byte("v")}); err != nil {
				t.Fatalf("write through the secured transport: %v", err)
			}
			w.Close()
			r := kafka.NewReader(kafka.ReaderConfig{Brokers: []string{addr}, Topic: "sec", Partition: 0, Dialer: d, MaxWait: 100 * time.Millisecond})
			m, err := r.ReadMessage(ctx)
			r.Close()
			if err != nil || string(m.Value) != "v" {
				t.Fatalf("read back: %q, %v", m.Value, err)
			}

			// The same through a Client whose first broker is dead: every client tries every
			// broker, and the security reaches admin, writer and reader alike.
			cl, err := NewClient([]string{"127.0.0.1:1", addr}, good)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cl.EnsureTopics(ctx, Spec{Name: "sec2", Partitions: 1}); err != nil {
				t.Fatalf("ensure a topic through the client: %v", err)
			}
			if n, err := cl.Partitions(ctx, "sec2"); err != nil || n != 1 {
				t.Fatalf("partitions through the client: %d, %v", n, err)
			}
			cw := cl.NewWriter("sec2")
			if err := cw.WriteMessages(ctx, kafka.Message{Key: []byte("k"), Value: []byte("v2")}); err != nil {
				t.Fatalf("write through the client: %v", err)
			}
			cw.Close()
			cr := cl.Reader(kafka.ReaderConfig{Topic: "sec2", Partition: 0, MaxWait: 100 * time.Millisecond})
			m, err = cr.ReadMessage(ctx)
			cr.Close()
			if err != nil || string(m.Value) != "v2" {
				t.Fatalf("read back through the client: %q, %v", m.Value, err)
			}

			bad := good
			bad.Password = "wrong"
			bd, _ := bad.Dialer()
			if c, err := bd.DialContext(ctx, "tcp", addr); err == nil {
				c.Close()
				t.Fatal("a wrong password was accepted")
			} else if Retryable(err) {
				t.Errorf("a wrong password is retryable (every role would retry it forever): %v", err)
			}
			noCA := good
			noCA.CAFile = ""
			nd, _ := noCA.Dialer()
			if c, err := nd.DialContext(ctx, "tcp", addr); err == nil {
				c.Close()
				t.Fatal("a broker certificate from an unknown CA was accepted")
			} else if Retryable(err) {
				t.Errorf("a certificate from an unknown CA is retryable: %v", err)
			}
		})
	}
}

// selfSigned makes a CA-signed-by-itself certificate for 127.0.0.1, writes the CA PEM to
// dir and returns the server's TLS config and the CA file.
func selfSigned(t *testing.T, dir string) (*tls.Config, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "trending test broker"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}, MinVersion: tls.VersionTLS12}, caFile
}
