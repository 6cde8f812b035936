package agent

import (
	"net/http"
	"time"
)

// HTTPLimits bounds what one client connection can hold (DESIGN.md "Bad
// input and bad clients"). Zero fields take the defaults below.
type HTTPLimits struct {
	// ReadHeaderTimeout bounds reading a request line and headers.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included. net/http
	// lifts the deadline once the body has been read, so a blocking read
	// (which has no body) can park far longer.
	ReadTimeout time.Duration
	// WriteTimeout bounds sending an answer, counted from the handler's
	// start; a blocking read (?index) gets the longest it may park on top.
	WriteTimeout time.Duration
}

// Defaults. A real client sends its request in one go, so the read bounds
// are generous for a slow link (30 s covers a 512 KiB body at 20 KiB/s)
// yet end a stalled one; the header bound fits the longest key (8 KiB, up
// to 24 KiB percent-encoded) with room for ordinary headers, where Go's
// default would buffer 1 MiB per connection.
const (
	defaultReadHeaderTimeout = 10 * time.Second // Consul's read_header_timeout
	defaultReadTimeout       = 30 * time.Second
	defaultWriteTimeout      = 30 * time.Second
	defaultIdleTimeout       = 120 * time.Second // Consul's idle_timeout
	defaultMaxHeaderBytes    = 64 << 10
)

func (l HTTPLimits) withDefaults() HTTPLimits {
	set := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	set(&l.ReadHeaderTimeout, defaultReadHeaderTimeout)
	set(&l.ReadTimeout, defaultReadTimeout)
	set(&l.WriteTimeout, defaultWriteTimeout)
	return l
}

// server applies the limits that net/http enforces itself. The server's
// WriteTimeout stays zero on purpose: it counts from the request's start,
// so it would cut the answer of a blocking read parked for minutes;
// writeDeadline sets one per request instead.
func (l HTTPLimits) server(s *http.Server) {
	s.ReadHeaderTimeout = l.ReadHeaderTimeout
	s.ReadTimeout = l.ReadTimeout
	s.IdleTimeout = defaultIdleTimeout
	s.MaxHeaderBytes = defaultMaxHeaderBytes
}

// writeDeadline gives each answer WriteTimeout from the handler's start,
// plus longestBlock for a blocking read (?index), so a client that stops
// reading its answers cannot hold the connection, while a parked read can
// still answer at the end of its wait.
func (l HTTPLimits) writeDeadline(next http.Handler, longestBlock time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := l.WriteTimeout
		if r.URL.Query().Has("index") {
			d += longestBlock
		}
		// An error means the writer takes no deadlines (not a network
		// connection), and then there is nothing to bound.
		_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(d))
		next.ServeHTTP(w, r)
	})
}
