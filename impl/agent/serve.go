package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/hashicorp/go-hclog"
)

// apiServers serve the agent's API on its HTTP listener, its HTTPS
// listener, or both (Consul allows both at once), with the same handler
// and the same limits.
type apiServers struct {
	servers []*http.Server
	served  []chan error
}

// serveAPI starts serving h on plain (nil: no HTTP) and on secure with
// secureTLS (nil: no HTTPS). Every request's context descends from ctx.
func serveAPI(ctx context.Context, h http.Handler, limits HTTPLimits, log hclog.Logger,
	plain, secure net.Listener, secureTLS *tls.Config) *apiServers {
	a := &apiServers{}
	if compressed, err := compressAnswers(h); err != nil {
		log.Error("answers go uncompressed", "error", err)
	} else {
		h = compressed
	}
	start := func(ln net.Listener, cfg *tls.Config) {
		hs := &http.Server{
			Handler:     h,
			BaseContext: func(net.Listener) context.Context { return ctx },
			ErrorLog:    log.StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true}),
			TLSConfig:   cfg,
		}
		// The TLS handshake is bounded too: net/http gives it the
		// shortest of the read bounds (10 s).
		limits.server(hs)
		served := make(chan error, 1)
		if cfg != nil {
			// ServeTLS adds HTTP/2 to what the listener offers, as
			// Consul's HTTPS does; the certificate is in cfg.
			go func() { served <- hs.ServeTLS(ln, "", "") }()
		} else {
			go func() { served <- hs.Serve(ln) }()
		}
		a.servers, a.served = append(a.servers, hs), append(a.served, served)
	}
	if plain != nil {
		start(plain, nil)
	}
	if secure != nil {
		start(secure, secureTLS)
	}
	return a
}

// stop stops every listener; with drain, answers in flight are finished
// first (stopHTTP), otherwise connections are cut (killHTTP).
func (a *apiServers) stop(drain bool) error {
	var errs []error
	for i, hs := range a.servers {
		if drain {
			errs = append(errs, stopHTTP(hs, a.served[i]))
		} else {
			errs = append(errs, killHTTP(hs, a.served[i]))
		}
	}
	return errors.Join(errs...)
}

// stopHTTP stops serving and waits for the serve loop to end. Shutdown
// waits for active connections; a client that dialed but never sent a
// request keeps one "new" for up to 5 s, so past a 2 s grace the remaining
// connections are closed outright. That is the intended way down, not a
// failure.
func stopHTTP(hs *http.Server, served <-chan error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var errs []error
	if err := hs.Shutdown(ctx); err != nil {
		if cerr := hs.Close(); cerr != nil {
			errs = append(errs, fmt.Errorf("agent: close HTTP after %v: %w", err, cerr))
		}
	}
	if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, fmt.Errorf("agent: serve HTTP: %w", err))
	}
	return errors.Join(errs...)
}

// killHTTP closes the listener and every connection at once.
func killHTTP(hs *http.Server, served <-chan error) error {
	err := hs.Close()
	if serr := <-served; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, fmt.Errorf("agent: serve HTTP: %w", serr))
	}
	if err != nil {
		return fmt.Errorf("agent: kill HTTP: %w", err)
	}
	return nil
}
