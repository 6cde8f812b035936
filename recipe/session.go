package recipe

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/consul/api"
)

// DefaultSessionTTL is api's lock TTL; the server refuses TTLs under 10s (S3).
const DefaultSessionTTL = 15 * time.Second

// NoLockDelay asks for a session without lock-delay (api cannot express 0:
// it omits a zero LockDelay, which gets the server's 15s default).
const NoLockDelay time.Duration = -1

// SessionOptions describe the session a recipe creates for itself.
type SessionOptions struct {
	Name string
	Node string // "" = the agent's node
	// TTL must be positive (the recipes detect a lost contact by it); 0
	// means DefaultSessionTTL.
	TTL time.Duration
	// LockDelay 0 means the server default (15s); NoLockDelay means none.
	LockDelay time.Duration
	// Checks nil means the server default (serfHealth); a non-nil empty
	// slice binds the session to no check, only to its TTL (S7).
	Checks []string
	// Behavior "" means the recipe's default (release for locks, delete
	// for semaphore contenders, like api).
	Behavior string
}

func (o SessionOptions) ttl() time.Duration {
	if o.TTL == 0 {
		return DefaultSessionTTL
	}
	return o.TTL
}

// createSession creates the session and returns its ID. The body is built
// by hand because api.Session.Create cannot send LockDelay 0.
func (c *Client) createSession(ctx context.Context, o SessionOptions, defBehavior string) (string, error) {
	ttl := o.ttl()
	if ttl < 0 {
		return "", fmt.Errorf("recipe: session TTL %v is negative", ttl)
	}
	body := map[string]any{"TTL": ttl.String()}
	if o.Name != "" {
		body["Name"] = o.Name
	}
	if o.Node != "" {
		body["Node"] = o.Node
	}
	switch {
	case o.LockDelay < 0:
		body["LockDelay"] = "0s"
	case o.LockDelay > 0:
		body["LockDelay"] = o.LockDelay.String()
	}
	if o.Checks != nil {
		body["Checks"] = o.Checks
	}
	b := o.Behavior
	if b == "" {
		b = defBehavior
	}
	body["Behavior"] = b
	var out struct{ ID string }
	if _, err := c.API.Raw().Write("/v1/session/create", body, &out, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
		return "", fmt.Errorf("recipe: create session: %w", err)
	}
	if out.ID == "" {
		return "", fmt.Errorf("recipe: create session: answer has no ID")
	}
	return out.ID, nil
}

// destroySession destroys id; a missing session is not an error.
func (c *Client) destroySession(ctx context.Context, id string) error {
	if _, err := c.API.Session().Destroy(id, (&api.WriteOptions{}).WithContext(ctx)); err != nil {
		return fmt.Errorf("recipe: destroy session %s: %w", id, err)
	}
	return nil
}

// renewer keeps a session alive and reports when that can no longer be
// trusted. The session is presumed lost once no renew *sent* in the last TTL
// succeeded: the server resets its timer when it handles a renew, which is
// after the send, so it cannot expire the session earlier than that (S18).
// The deadline runs on the clock even while a renew hangs in a partition,
// which is what makes `tenure lock` signal its child within one TTL.
type renewer struct {
	c    *Client
	id   string
	ttl  time.Duration
	lost chan struct{} // closed on loss; err says why
	err  error
	stop chan struct{}
	done chan struct{}
}

// renewRetry is the pause between failed renews; a TTL of 10s gives 1s.
func renewRetry(ttl time.Duration) time.Duration {
	return min(time.Second, ttl/10)
}

// startRenewer starts renewing id; lastOK is when the create (or last
// successful renew) was sent.
func (c *Client) startRenewer(id string, ttl time.Duration, lastOK time.Time) *renewer {
	r := &renewer{c: c, id: id, ttl: ttl, lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go r.run(lastOK)
	return r
}

// Stop ends renewal (not the session) and waits for the loop to finish.
func (r *renewer) Stop() {
	select {
	case <-r.stop:
	default:
		close(r.stop)
	}
	<-r.done
}

// lostErr is why the session was lost, or nil while it is trusted; a nil
// renewer (a session the caller renews) is never lost here.
func (r *renewer) lostErr() error {
	if r == nil {
		return nil
	}
	select {
	case <-r.lost:
		return r.err
	default:
		return nil
	}
}

func (r *renewer) lose(err error) {
	r.err = err
	close(r.lost)
}

type renewResult struct {
	entry *api.SessionEntry
	err   error
}

func (r *renewer) run(lastOK time.Time) {
	defer close(r.done)
	clock := r.c.Clock
	wait := r.ttl / 2
	for {
		remaining := lastOK.Add(r.ttl).Sub(clock.Now())
		if remaining <= 0 {
			r.lose(fmt.Errorf("%w (session %s)", ErrRenewTimeout, r.id))
			return
		}
		deadline, stopDeadline := after(clock, remaining)
		tick, stopTick := after(clock, wait)
		select {
		case <-r.stop:
			stopTick()
			stopDeadline()
			return
		case <-deadline:
			stopTick()
			r.lose(fmt.Errorf("%w (session %s)", ErrRenewTimeout, r.id))
			return
		case <-tick:
		}
		sent := clock.Now()
		ctx, cancel := context.WithCancel(context.Background())
		res := make(chan renewResult, 1)
		go func() {
			e, _, err := r.c.API.Session().Renew(r.id, (&api.WriteOptions{}).WithContext(ctx))
			res <- renewResult{e, err}
		}()
		var got renewResult
		select {
		case <-r.stop:
			cancel()
			stopDeadline()
			return
		case <-deadline:
			cancel()
			r.lose(fmt.Errorf("%w (session %s)", ErrRenewTimeout, r.id))
			return
		case got = <-res:
		}
		cancel()
		stopDeadline()
		switch {
		case got.err != nil:
			wait = renewRetry(r.ttl)
		case got.entry == nil:
			r.lose(fmt.Errorf("%w: renew of %s answered not found", ErrSessionGone, r.id))
			return
		default:
			lastOK = sent
			// The server may answer a different TTL (api honours it too).
			if d, err := time.ParseDuration(got.entry.TTL); err == nil && d > 0 {
				r.ttl = d
			}
			wait = r.ttl / 2
		}
	}
}
