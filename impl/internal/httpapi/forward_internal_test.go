package httpapi

import (
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// TestReadSizedIsReadAll: reading a body sized by its Content-Length gives
// what io.ReadAll through a LimitReader gives, whatever the length claims,
// and consumes no byte past the limit.
func TestReadSizedIsReadAll(t *testing.T) {
	const limit = 10
	for _, body := range []string{"", "abc", "0123456789", "0123456789abc"} {
		for _, size := range []int64{-1, 0, 2, 3, 9, 10, 13} {
			for _, oneByte := range []bool{false, true} {
				open := func() (io.Reader, *strings.Reader) {
					sr := strings.NewReader(body)
					if oneByte {
						return iotest.OneByteReader(sr), sr
					}
					return sr, sr
				}
				r, left := open()
				got, err := readSized(r, size, limit)
				wr, wantLeft := open()
				want, werr := io.ReadAll(io.LimitReader(wr, limit))
				if string(got) != string(want) || err != werr || left.Len() != wantLeft.Len() {
					t.Errorf("body %q size %d: got %q %v (%d left), want %q %v (%d left)", body, size, got, err,
						left.Len(), want, werr, wantLeft.Len())
				}
			}
		}
	}
	broken := errors.New("broken")
	if _, err := readSized(iotest.ErrReader(broken), 3, limit); err != broken {
		t.Errorf("a failing body read gave %v", err)
	}
}
