package eventlog

import (
	"context"
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/segmentio/kafka-go"
	"github.com/segmentio/kafka-go/sasl"
	"github.com/segmentio/kafka-go/sasl/plain"
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
		return &scram{name: "SCRAM-SHA-256", h: sha256.New, user: s.Username, pass: s.Password}, nil
	case SASLScramSHA512:
		return &scram{name: "SCRAM-SHA-512", h: sha512.New, user: s.Username, pass: s.Password}, nil
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

// scram is a SCRAM client (RFC 5802, with the hashes of RFC 7677), on the standard library,
// so the module needs no SCRAM dependency. Usernames and passwords are used as given, without
// SASLprep: ASCII credentials, what Kafka deployments use, are unaffected.
type scram struct {
	name       string
	h          func() hash.Hash
	user, pass string
	nonce      string // the client nonce; empty draws a random one (tests fix it)
}

func (m *scram) Name() string { return m.name }

func (m *scram) Start(context.Context) (sasl.StateMachine, []byte, error) {
	nonce := m.nonce
	if nonce == "" {
		var b [24]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, nil, fmt.Errorf("scram nonce: %w", err)
		}
		nonce = base64.RawStdEncoding.EncodeToString(b[:])
	}
	user := strings.NewReplacer("=", "=3D", ",", "=2C").Replace(m.user)
	bare := "n=" + user + ",r=" + nonce
	return &scramSession{m: m, nonce: nonce, clientFirstBare: bare}, []byte("n,," + bare), nil
}

type scramSession struct {
	m               *scram
	nonce           string
	clientFirstBare string
	serverSignature []byte // set after the client's final message
}

func (s *scramSession) Next(_ context.Context, challenge []byte) (bool, []byte, error) {
	if s.serverSignature != nil {
		return true, nil, s.verify(string(challenge))
	}
	attrs := scramAttrs(string(challenge))
	if e, ok := attrs["e"]; ok {
		return false, nil, fmt.Errorf("scram: server refused: %s", e)
	}
	nonce, salt64, iter64 := attrs["r"], attrs["s"], attrs["i"]
	if !strings.HasPrefix(nonce, s.nonce) || len(nonce) == len(s.nonce) {
		return false, nil, errors.New("scram: server nonce does not extend the client nonce")
	}
	salt, err := base64.StdEncoding.DecodeString(salt64)
	if err != nil || len(salt) == 0 {
		return false, nil, errors.New("scram: bad salt from server")
	}
	iter, err := strconv.Atoi(iter64)
	if err != nil || iter < 1 || iter > 1<<24 {
		return false, nil, fmt.Errorf("scram: bad iteration count %q from server", iter64)
	}
	h := s.m.h
	salted, err := pbkdf2.Key(h, s.m.pass, salt, iter, h().Size())
	if err != nil {
		return false, nil, fmt.Errorf("scram: %w", err)
	}
	clientKey := scramHMAC(h, salted, "Client Key")
	sum := h()
	sum.Write(clientKey)
	storedKey := sum.Sum(nil)
	withoutProof := "c=biws,r=" + nonce // biws: base64 of the GS2 header "n,,"
	authMessage := s.clientFirstBare + "," + string(challenge) + "," + withoutProof
	proof := scramHMAC(h, storedKey, authMessage)
	for i := range proof {
		proof[i] ^= clientKey[i]
	}
	s.serverSignature = scramHMAC(h, scramHMAC(h, salted, "Server Key"), authMessage)
	return false, []byte(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(proof)), nil
}

// verify checks the server's final message, so a server that does not know the password
// (an impostor) is caught.
func (s *scramSession) verify(final string) error {
	attrs := scramAttrs(final)
	if e, ok := attrs["e"]; ok {
		return fmt.Errorf("scram: server refused: %s", e)
	}
	v, err := base64.StdEncoding.DecodeString(attrs["v"])
	if err != nil || subtle.ConstantTimeCompare(v, s.serverSignature) != 1 {
		return errors.New("scram: the server's signature does not match: not the server we share the password with")
	}
	return nil
}

func scramHMAC(h func() hash.Hash, key []byte, msg string) []byte {
	mac := hmac.New(h, key)
	mac.Write([]byte(msg))
	return mac.Sum(nil)
}

// scramAttrs splits "a=1,b=2" into its attributes; values may contain '='.
func scramAttrs(msg string) map[string]string {
	out := map[string]string{}
	for _, kv := range strings.Split(msg, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && len(k) == 1 {
			out[k] = v
		}
	}
	return out
}
