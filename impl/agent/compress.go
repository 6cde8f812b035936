package agent

import (
	"fmt"
	"net/http"

	"github.com/klauspost/compress/gzhttp"
)

// The HTTP API's answers are compressed as Consul's are (CONSUL.md §25):
// gzip, for a client whose Accept-Encoding allows it, once a body reaches
// 1400 bytes; Vary: Accept-Encoding on every answer. Request bodies are
// not decompressed and zstd is not offered, as Consul does neither. The
// monitor and the metrics stream, which Consul compresses from their
// first byte, go uncompressed: a compressing writer holds the headers
// until the first line, and consul/api's Monitor waits for the headers
// before the caller can do anything that logs.

// compressMinSize is gziphandler's DefaultMinSize, which Consul keeps.
const compressMinSize = 1400

// streamedPaths are the streams that go uncompressed.
var streamedPaths = map[string]bool{"/v1/agent/monitor": true, "/v1/agent/metrics/stream": true}

// compressAnswers is h with its answers compressed as Consul's.
func compressAnswers(h http.Handler) (http.Handler, error) {
	wrap, err := gzhttp.NewWrapper(gzhttp.MinSize(compressMinSize), gzhttp.EnableZstd(false),
		gzhttp.ContentTypeFilter(func(string) bool { return true }))
	if err != nil {
		return nil, fmt.Errorf("compress answers: %w", err)
	}
	sized := wrap(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if streamedPaths[r.URL.Path] {
			w.Header().Add("Vary", "Accept-Encoding")
			h.ServeHTTP(w, r)
			return
		}
		sized.ServeHTTP(w, r)
	}), nil
}
