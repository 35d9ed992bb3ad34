package archive

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// FaultEnv is the environment variable of the archiver's one test-only fault:
//
//	TRENDING_FAULT=archive-after-upload     SIGKILL the process after the first roll's uploads
//	TRENDING_FAULT=archive-after-upload:N   ... after the N-th roll's uploads (N >= 1)
//
// The process kills itself after a roll's objects and progress marker are in S3 and before
// its Kafka commit: the one place where a crash makes the next run archive the same offsets
// again, so an end-to-end test (internal/e2e) can show that the readers' dedup by
// (partition, offset) is what keeps each event once. Values of other roles' faults (not
// starting with "archive-") are ignored; an unknown archive fault fails New, so a typo
// cannot pass for a test that ran. Never set it in production.
const FaultEnv = "TRENDING_FAULT"

const faultAfterUpload = "archive-after-upload"

// faultHook returns the beforeCommit hook FaultEnv asks for, or nil when it asks for none.
func faultHook(v string) (func(int32) error, error) {
	if !strings.HasPrefix(v, "archive-") {
		return nil, nil
	}
	name, count, hasCount := strings.Cut(v, ":")
	n := 1
	if hasCount {
		var err error
		if n, err = strconv.Atoi(count); err != nil || n < 1 {
			return nil, fmt.Errorf("archive: %s=%q: the roll count must be a positive integer", FaultEnv, v)
		}
	}
	if name != faultAfterUpload {
		return nil, fmt.Errorf("archive: %s=%q: unknown fault (known: %s[:N])", FaultEnv, v, faultAfterUpload)
	}
	rolls := 0
	return func(int32) error {
		if rolls++; rolls < n {
			return nil
		}
		p, err := os.FindProcess(os.Getpid())
		if err == nil {
			err = p.Kill() // SIGKILL: no deferred function, no flush, no commit
		}
		return fmt.Errorf("archive: %s: kill self: %v", FaultEnv, err)
	}, nil
}
