package eventlog

import (
	"crypto/tls"
	"crypto/x509"
	"errors"

	"github.com/segmentio/kafka-go"
)

// ErrUnrecoverable marks a Kafka failure a retry cannot fix: a refused credential or
// authorization, a broker certificate the client does not trust, a topic that stays unknown
// to a broker that answers (deleted). A role that gets one exits (exit status 1) with a
// message saying what to fix, rather than retry forever.
var ErrUnrecoverable = errors.New("kafka: not retryable")

// Retryable reports whether a failed Kafka call may succeed when tried again later: every
// failure to reach or hear from a broker (refused or reset connections, timeouts, a broker
// restarting or electing leaders, a group rebalancing), and every error it does not know. A nil error is not a failure: false.
// Not retryable: authentication (SASL) and authorization failures, TLS certificate
// failures, a compression codec kafka-go lacks, and errors marked ErrUnrecoverable. An
// unknown topic or partition is retryable here (a restarting broker answers so before it has
// loaded its logs); Broker.Failed turns one that persists into ErrUnrecoverable.
//
// It is the one classification every role's retry loop uses (speed, archive, merge, the
// ingest, the load generator), so they agree on what an outage is.
func Retryable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnrecoverable) {
		return false
	}
	var we kafka.WriteErrors
	if errors.As(err, &we) {
		for _, e := range we {
			if e != nil && !Retryable(e) {
				return false
			}
		}
		return true
	}
	for _, code := range []kafka.Error{
		kafka.SASLAuthenticationFailed, kafka.UnsupportedSASLMechanism, kafka.IllegalSASLState,
		kafka.TopicAuthorizationFailed, kafka.GroupAuthorizationFailed, kafka.ClusterAuthorizationFailed,
		kafka.TransactionalIDAuthorizationFailed, kafka.DelegationTokenAuthorizationFailed,
	} {
		if errors.Is(err, code) {
			return false
		}
	}
	var (
		unknownCA  x509.UnknownAuthorityError
		badHost    x509.HostnameError
		invalid    x509.CertificateInvalidError
		verifyFail *tls.CertificateVerificationError
		header     tls.RecordHeaderError
	)
	if errors.As(err, &unknownCA) || errors.As(err, &badHost) || errors.As(err, &invalid) || errors.As(err, &verifyFail) || errors.As(err, &header) {
		return false
	}
	return !isUnknownCodec(err)
}

// isUnknownCodec reports kafka-go's error for a record batch compressed with a codec it
// has not registered (unexported there): no retry decodes it.
func isUnknownCodec(err error) bool {
	for e := err; e != nil; e = errors.Unwrap(e) {
		if e.Error() == "the compression code is invalid or its codec has not been imported" {
			return true
		}
	}
	return false
}
