//go:build !unix

package workspace_test

import (
	"testing"
	"time"
)

// cpuTime is 0 where the system has no getrusage: cpu-ms/op reads 0.
func cpuTime(*testing.B) time.Duration { return 0 }
