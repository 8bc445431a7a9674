package checkpointtest

import "testing"

// Bench runs the standard benchmarks for a backend as sub-benchmarks.
func Bench(b *testing.B, be Backend) {
	b.Skip("benchmarks not written yet")
}
