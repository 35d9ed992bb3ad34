package eventlog

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
	"github.com/segmentio/kafka-go/sasl/scram"
)

// SASL mechanisms Security accepts.
const (
	SASLPlain       = "plain"
	SASLScramSHA256 = "scram-sha-256"
	SASLScramSHA512 = "scram-sha-512"
)

// Security says how trending's Kafka clients encrypt and authenticate. The zero value is a
// plaintext, unauthenticated connection: the local services and the embedded broker.
//
// Production sets TLS (with CAFile when the brokers' certificates are not signed by a public
// CA; CertFile and KeyFile for mutual TLS) and a SASL mechanism with Username and Password.
// Password comes from the environment (TRENDING_KAFKA_PASSWORD, a Kubernetes Secret) and is
// never printed: String redacts it.
type Security struct {
	// TLS encrypts every connection to the brokers. Default false.
	TLS bool
	// CAFile is a PEM bundle of the CAs that sign the brokers' certificates; empty uses the
	// system roots. Setting it implies TLS.
	CAFile string
	// CertFile and KeyFile are the client certificate and key for mutual TLS; both or
	// neither. Setting them implies TLS.
	CertFile, KeyFile string
	// SASLMechanism is "" (none), "plain", "scram-sha-256" or "scram-sha-512".
	SASLMechanism string
	// Username and Password are the SASL credentials; both are required with a mechanism.
	Username, Password string
}

// Enabled reports whether s asks for anything beyond plaintext.
func (s Security) Enabled() bool {
	return s.TLS || s.CAFile != "" || s.CertFile != "" || s.KeyFile != "" || s.SASLMechanism != ""
}

func (s Security) tlsOn() bool { return s.TLS || s.CAFile != "" || s.CertFile != "" || s.KeyFile != "" }

// Validate reports settings that cannot work, saying what to change.
func (s Security) Validate() error {
	if (s.CertFile == "") != (s.KeyFile == "") {
		return errors.New("kafka client certificate: set both the certificate and the key file, or neither")
	}
	switch strings.ToLower(s.SASLMechanism) {
	case "":
		if s.Username != "" || s.Password != "" {
			return errors.New("kafka user or password set without a SASL mechanism: set the mechanism (plain, scram-sha-256 or scram-sha-512)")
		}
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		if s.Username == "" || s.Password == "" {
			return fmt.Errorf("kafka SASL %s needs a user and a password (the password from TRENDING_KAFKA_PASSWORD)", s.SASLMechanism)
		}
		if strings.ToLower(s.SASLMechanism) == SASLPlain && !s.tlsOn() {
			return errors.New("kafka SASL plain without TLS would send the password in clear text: enable TLS")
		}
	default:
		return fmt.Errorf("kafka SASL mechanism %q: use plain, scram-sha-256 or scram-sha-512", s.SASLMechanism)
	}
	return nil
}

// String describes s without the password, for logs.
func (s Security) String() string {
	var b strings.Builder
	b.WriteString("tls=")
	b.WriteString(strconv.FormatBool(s.tlsOn()))
	if s.CAFile != "" {
		b.WriteString(" ca=" + s.CAFile)
	}
	if s.CertFile != "" {
		b.WriteString(" cert=" + s.CertFile)
	}
	if s.SASLMechanism != "" {
		b.WriteString(" sasl=" + strings.ToLower(s.SASLMechanism) + " user=" + s.Username)
	}
	return b.String()
}

// TLSConfig returns the TLS configuration, nil when TLS is off.
func (s Security) TLSConfig() (*tls.Config, error) {
	if !s.tlsOn() {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if s.CAFile != "" {
		pem, err := os.ReadFile(s.CAFile)
		if err != nil {
			return nil, fmt.Errorf("kafka CA file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("kafka CA file %s: no PEM certificate in it", s.CAFile)
		}
		cfg.RootCAs = pool
	}
	if s.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("kafka client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// Mechanism returns the SASL mechanism, nil when none is configured.
func (s Security) Mechanism() (sasl.Mechanism, error) {
	switch strings.ToLower(s.SASLMechanism) {
	case "":
		return nil, nil
	case SASLPlain:
		return plain.Mechanism{Username: s.Username, Password: s.Password}, nil
	case SASLScramSHA256:
		return scram.Mechanism(scram.SHA256, s.Username, s.Password)
	case SASLScramSHA512:
		return scram.Mechanism(scram.SHA512, s.Username, s.Password)
	}
	return nil, s.Validate()
}

// Dialer returns a kafka-go Dialer with s's TLS and SASL (readers, consumer groups, admin).
func (s Security) Dialer() (*kafka.Dialer, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	t, err := s.TLSConfig()
	if err != nil {
		return nil, err
	}
	m, err := s.Mechanism()
	if err != nil {
		return nil, err
	}
	return &kafka.Dialer{Timeout: 10 * time.Second, DualStack: true, TLS: t, SASLMechanism: m}, nil
}

// Transport returns a kafka-go Transport with s's TLS and SASL (writers), with its own
// metadata cache (see NewWriter).
func (s Security) Transport() (*kafka.Transport, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	t, err := s.TLSConfig()
	if err != nil {
		return nil, err
	}
	m, err := s.Mechanism()
	if err != nil {
		return nil, err
	}
	return &kafka.Transport{MetadataTTL: 10 * time.Second, TLS: t, SASL: m}, nil
}
