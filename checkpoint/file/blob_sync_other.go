//go:build !linux

package file

// syncFS is not available here: PutBlobs fsyncs each blob.
func syncFS(string) (bool, error) { return false, nil }
