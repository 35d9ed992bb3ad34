// Package objstore is the S3 client every part of trending uses for objects: speed-layer
// checkpoints, the Parquet archive and the batch layer's reads. It wraps aws-sdk-go-v2 so that
// S3, MinIO and the embedded gofakes3 server (embedded.go) go through one code path.
//
// A Client is safe for concurrent use.
//
// In detail (DESIGN.md's file map has the line): one S3 client path (aws-sdk-go-v2) for
// S3, MinIO and the embedded gofakes3 server; conditional create (`PutIfAbsent`) and
// replace (`PutIfMatch`); `embedded.go`: gofakes3's s3afero backend over a directory, with
// two changes of ours: a listing walks only the directory its prefix names (s3afero walked
// the whole bucket under its one lock: two thirds of `up`'s CPU with a week of archive
// files), and an upload is read whole before it is written (s3afero left a cut-off upload
// as a partial object that failed every later listing); `lifecycle.go`: the bucket's
// expiry rules (`SetExpiry`, `Expiries`; the embedded server answers NotImplemented)
package objstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
	"trending/internal/setting"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// Config says where the objects live. Start from DefaultConfig: New takes every field as
// it is, and a zero field means zero (see each field).
type Config struct {
	// Endpoint is the S3 API URL, e.g. http://127.0.0.1:39000 for MinIO. Empty means AWS S3
	// with the region's default endpoint.
	Endpoint string
	// Region signs the requests (and names the AWS endpoint when Endpoint is empty);
	// default us-east-1. Required.
	Region string
	// Bucket holds every object trending writes. Required.
	Bucket string
	// AccessKey and SecretKey are static credentials. Empty means the AWS default chain
	// (environment, shared config, instance role).
	AccessKey, SecretKey string
	// PathStyle addresses buckets as endpoint/bucket (MinIO, gofakes3). Nil derives it:
	// true when Endpoint is set.
	PathStyle *bool
	// PartSize is the multipart part size for large uploads: a body larger than it goes
	// up in parts of this size. Default 16 MiB; at least 5 MiB, S3's smallest part.
	PartSize int64
	// Timeout bounds each request; default 60 s. Zero means no timeout (only the
	// caller's context ends a request).
	Timeout time.Duration
}

// MinPartSize is the smallest Config.PartSize: S3 refuses smaller multipart parts.
const MinPartSize = 5 << 20

// DefaultConfig returns the defaults, with Bucket (and Endpoint, for anything but AWS S3)
// still to be set.
func DefaultConfig() Config {
	return Config{Region: "us-east-1", PartSize: 16 << 20, Timeout: 60 * time.Second}
}

// Validate reports a configuration that cannot work, saying what to change: one
// setting.Invalid per field, joined.
func (c Config) Validate() error {
	var errs []error
	if c.Bucket == "" {
		errs = append(errs, setting.Invalid("Bucket", "s3 bucket is empty"))
	}
	if c.Endpoint != "" {
		u, err := url.Parse(c.Endpoint)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("s3 endpoint %q: want a URL such as http://127.0.0.1:39000", c.Endpoint))
		}
	}
	if c.Region == "" {
		errs = append(errs, setting.Invalid("Region", "s3 region is empty (default %s)", DefaultConfig().Region))
	}
	if (c.AccessKey == "") != (c.SecretKey == "") {
		errs = append(errs, errors.New("s3 credentials: set both access key and secret key, or neither to use the AWS default chain"))
	}
	if c.PartSize < MinPartSize {
		errs = append(errs, setting.Invalid("PartSize", "%d: must be at least %d bytes, S3's smallest part (default %d)", c.PartSize, MinPartSize, DefaultConfig().PartSize))
	}
	if c.Timeout < 0 {
		errs = append(errs, setting.Invalid("Timeout", "%s: must not be negative (0: no timeout; default %s)", c.Timeout, DefaultConfig().Timeout))
	}
	return errors.Join(errs...)
}

// Object is one listed object.
type Object struct {
	Key      string
	Size     int64
	ETag     string
	Modified time.Time
}

// Client reads and writes objects in one bucket.
type Client struct {
	cfg    Config
	client *s3.Client
	up     *manager.Uploader
}

// New builds a Client of cfg, which must Validate. It does not contact the server; call
// EnsureBucket for that.
func New(ctx context.Context, cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	pathStyle := cfg.Endpoint != ""
	if cfg.PathStyle != nil {
		pathStyle = *cfg.PathStyle
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(cfg.Region),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(cfg.Timeout)),
		config.WithRetryer(func() aws.Retryer {
			return retry.NewStandard(func(o *retry.StandardOptions) { o.MaxAttempts = 3 })
		}),
	}
	if cfg.AccessKey != "" {
		opts = append(opts, config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, "")))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = pathStyle
		// MinIO and gofakes3 do not all speak the newer default checksums.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	up := manager.NewUploader(client, func(u *manager.Uploader) { u.PartSize = cfg.PartSize })
	return &Client{cfg: cfg, client: client, up: up}, nil
}

// Bucket returns the bucket name.
func (s *Client) Bucket() string { return s.cfg.Bucket }

// S3 exposes the underlying S3 client for callers that need an operation this package
// does not wrap.
func (s *Client) S3() *s3.Client { return s.client }

// EnsureBucket creates the bucket when it does not exist.
func (s *Client) EnsureBucket(ctx context.Context) error {
	_, err := s.client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &s.cfg.Bucket})
	if err == nil {
		return nil
	}
	_, err = s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &s.cfg.Bucket})
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists
	if err != nil && !errors.As(err, &owned) && !errors.As(err, &exists) {
		return fmt.Errorf("create bucket %s at %s: %w", s.cfg.Bucket, s.endpoint(), err)
	}
	return nil
}

func (s *Client) endpoint() string {
	if s.cfg.Endpoint == "" {
		return "s3." + s.cfg.Region
	}
	return s.cfg.Endpoint
}

// Put writes body under key, replacing any object there, and returns its ETag. Bodies larger
// than the part size go up as a multipart upload; either way the object appears whole or
// not at all.
func (s *Client) Put(ctx context.Context, key string, body []byte) (string, error) {
	if int64(len(body)) > s.cfg.PartSize {
		out, err := s.up.Upload(ctx, &s3.PutObjectInput{Bucket: &s.cfg.Bucket, Key: &key, Body: bytes.NewReader(body)})
		if err != nil {
			return "", fmt.Errorf("put %s (multipart): %w", key, err)
		}
		return strings.Trim(aws.ToString(out.ETag), `"`), nil
	}
	out, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.cfg.Bucket, Key: &key, Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body)))})
	if err != nil {
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	return strings.Trim(aws.ToString(out.ETag), `"`), nil
}

// PutIfAbsent writes body under key only when no object is there (If-None-Match: *). It
// returns ErrExists when one is.
func (s *Client) PutIfAbsent(ctx context.Context, key string, body []byte) (string, error) {
	out, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.cfg.Bucket, Key: &key, Body: bytes.NewReader(body), ContentLength: aws.Int64(int64(len(body))), IfNoneMatch: aws.String("*")})
	if err != nil {
		if code(err) == "PreconditionFailed" || code(err) == "ConditionalRequestConflict" {
			return "", fmt.Errorf("put %s: %w", key, ErrExists)
		}
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	return strings.Trim(aws.ToString(out.ETag), `"`), nil
}

// Get reads a whole object. A missing key is ErrNotFound.
func (s *Client) Get(ctx context.Context, key string) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.cfg.Bucket, Key: &key})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("get %s: %w", key, ErrNotFound)
		}
		return nil, fmt.Errorf("get %s: %w", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return b, nil
}

// List returns every object under prefix, in key order.
func (s *Client) List(ctx context.Context, prefix string) ([]Object, error) {
	var out []Object
	p := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.cfg.Bucket, Prefix: &prefix})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if isNotFound(err) {
				return nil, fmt.Errorf("list %s: %w", prefix, ErrNotFound)
			}
			return nil, fmt.Errorf("list %s: %w", prefix, err)
		}
		for _, o := range page.Contents {
			out = append(out, Object{
				Key:      aws.ToString(o.Key),
				Size:     aws.ToInt64(o.Size),
				ETag:     strings.Trim(aws.ToString(o.ETag), `"`),
				Modified: aws.ToTime(o.LastModified),
			})
		}
	}
	return out, nil
}

// Delete removes keys; a missing key is not an error.
func (s *Client) Delete(ctx context.Context, keys ...string) error {
	for len(keys) > 0 {
		n := min(len(keys), 1000)
		ids := make([]types.ObjectIdentifier, n)
		for i, k := range keys[:n] {
			ids[i] = types.ObjectIdentifier{Key: aws.String(k)}
		}
		out, err := s.client.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: &s.cfg.Bucket, Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
		if err != nil {
			return fmt.Errorf("delete %d objects: %w", n, err)
		}
		if len(out.Errors) > 0 {
			e := out.Errors[0]
			return fmt.Errorf("delete %s: %s %s", aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
		}
		keys = keys[n:]
	}
	return nil
}

func code(err error) string {
	var apiErr smithy.APIError
	if errors.As(err, &apiErr) {
		return apiErr.ErrorCode()
	}
	return ""
}

func isNotFound(err error) bool {
	var nsk *types.NoSuchKey
	var nf *types.NotFound
	var nb *types.NoSuchBucket
	if errors.As(err, &nsk) || errors.As(err, &nf) || errors.As(err, &nb) {
		return true
	}
	switch code(err) {
	case "NoSuchKey", "NotFound", "NoSuchBucket":
		return true
	}
	return false
}

// IsRetryable reports whether err is worth retrying: the server was unreachable or said it
// was busy. Not-found, exists and bad-request errors are final.
func IsRetryable(err error) bool {
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrExists) || errors.Is(err, ErrChanged) || errors.Is(err, context.Canceled) {
		return false
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) {
		// Status 0: no response at all (connection refused, reset, timeout): retryable.
		st := re.HTTPStatusCode()
		return st == 0 || st >= 500 || st == 429 || st == 408
	}
	return true
}

// GetVersion reads a whole object and its ETag, the version PutIfMatch replaces. A missing
// key is ErrNotFound.
func (s *Client) GetVersion(ctx context.Context, key string) ([]byte, string, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.cfg.Bucket, Key: &key})
	if err != nil {
		if isNotFound(err) {
			return nil, "", fmt.Errorf("get %s: %w", key, ErrNotFound)
		}
		return nil, "", fmt.Errorf("get %s: %w", key, err)
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", key, err)
	}
	return b, strings.Trim(aws.ToString(out.ETag), `"`), nil
}

// PutIfMatch replaces the object under key only when its ETag is still etag (If-Match), so
// a read-modify-write loses no concurrent write. It returns ErrChanged when the object was
// replaced or deleted since it was read. S3, recent MinIO and gofakes3 honour If-Match.
func (s *Client) PutIfMatch(ctx context.Context, key string, body []byte, etag string) (string, error) {
	out, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.cfg.Bucket, Key: &key, Body: bytes.NewReader(body),
		ContentLength: aws.Int64(int64(len(body))), IfMatch: aws.String(`"` + etag + `"`)})
	if err != nil {
		switch code(err) {
		case "PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey":
			return "", fmt.Errorf("put %s: %w", key, ErrChanged)
		}
		return "", fmt.Errorf("put %s: %w", key, err)
	}
	return strings.Trim(aws.ToString(out.ETag), `"`), nil
}
