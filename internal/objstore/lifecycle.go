package objstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// Expiry is one lifecycle rule: objects whose key starts with Prefix are deleted by the
// object store Days after they were written.
type Expiry struct {
	ID     string
	Prefix string
	Days   int
}

// ErrNoLifecycle is returned by SetExpiry when the server keeps no lifecycle rules (the
// embedded gofakes3 server).
var ErrNoLifecycle = errors.New("this object store keeps no lifecycle rules")

// SetExpiry puts rules as the bucket's lifecycle configuration (S3 and MinIO apply them
// themselves, daily), replacing the rules of the same IDs and keeping any other rule the
// bucket has.
func (s *Client) SetExpiry(ctx context.Context, rules ...Expiry) error {
	current, err := s.lifecycle(ctx)
	if err != nil {
		return err
	}
	replaced := map[string]bool{}
	for _, r := range rules {
		replaced[r.ID] = true
	}
	var out []types.LifecycleRule
	for _, r := range current {
		if r.ID == nil || !replaced[*r.ID] {
			out = append(out, r)
		}
	}
	for _, r := range rules {
		out = append(out, types.LifecycleRule{
			ID:         aws.String(r.ID),
			Status:     types.ExpirationStatusEnabled,
			Filter:     &types.LifecycleRuleFilter{Prefix: aws.String(r.Prefix)},
			Expiration: &types.LifecycleExpiration{Days: aws.Int32(int32(r.Days))},
		})
	}
	_, err = s.client.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{
		Bucket: &s.cfg.Bucket, LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: out}})
	if err != nil {
		if notImplemented(err) {
			return fmt.Errorf("%w (%s)", ErrNoLifecycle, s.endpoint())
		}
		return fmt.Errorf("set the lifecycle rules of bucket %s at %s: %w", s.cfg.Bucket, s.endpoint(), err)
	}
	return nil
}

// Expiries returns the bucket's expiry rules (those with a prefix and days).
func (s *Client) Expiries(ctx context.Context) ([]Expiry, error) {
	rules, err := s.lifecycle(ctx)
	if err != nil {
		return nil, err
	}
	var out []Expiry
	for _, r := range rules {
		if r.Expiration == nil || r.Expiration.Days == nil || r.Status != types.ExpirationStatusEnabled {
			continue
		}
		e := Expiry{ID: aws.ToString(r.ID), Days: int(*r.Expiration.Days)}
		switch {
		case r.Filter != nil && r.Filter.Prefix != nil:
			e.Prefix = *r.Filter.Prefix
		case r.Prefix != nil:
			e.Prefix = *r.Prefix
		}
		out = append(out, e)
	}
	return out, nil
}

func (s *Client) lifecycle(ctx context.Context) ([]types.LifecycleRule, error) {
	out, err := s.client.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: &s.cfg.Bucket})
	var ae smithy.APIError
	switch {
	case err == nil:
		return out.Rules, nil
	case errors.As(err, &ae) && ae.ErrorCode() == "NoSuchLifecycleConfiguration":
		return nil, nil
	case notImplemented(err):
		return nil, fmt.Errorf("%w (%s)", ErrNoLifecycle, s.endpoint())
	}
	return nil, fmt.Errorf("read the lifecycle rules of bucket %s at %s: %w", s.cfg.Bucket, s.endpoint(), err)
}

func notImplemented(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && (ae.ErrorCode() == "NotImplemented" || ae.ErrorCode() == "MethodNotAllowed")
}
