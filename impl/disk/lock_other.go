//go:build !unix

package disk

import "io"

// Lock does nothing where flock is unavailable: there, keeping two
// servers off one directory is the operator's job.
func (OS) Lock(string) (io.Closer, error) { return nopCloser{}, nil }

type nopCloser struct{}

func (nopCloser) Close() error { return nil }
