package recipe

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/consul/api"
)

// ElectionKey is where Consul's leader-election guide keeps a service's
// leader: service/<name>/leader.
func ElectionKey(service string) string { return "service/" + service + "/leader" }

// Election is leader election for one service: a Lock on ElectionKey. The
// flags are whatever o.Flags says (0, like the guide's plain acquire), and
// StrictFlags is off so any client that follows the guide can take part.
type Election struct {
	*Lock
}

// Election prepares a candidacy for service; o.Key is ignored.
func (c *Client) Election(service string, o LockOptions) (*Election, error) {
	if service == "" {
		return nil, errors.New("recipe: election service name is empty")
	}
	o.Key = ElectionKey(service)
	l, err := c.Lock(o)
	if err != nil {
		return nil, err
	}
	return &Election{l}, nil
}

// Campaign blocks until this candidate leads (or ctx ends). The returned
// Hold carries the leader's sequencer and its lost-leadership channel.
func (e *Election) Campaign(ctx context.Context) (*Hold, error) { return e.Acquire(ctx) }

// Leader is the current leader as a follower sees it.
type Leader struct {
	Sequencer Sequencer
	Value     []byte // what the leader stored (an address, typically)
}

// Leader reads who leads now; ok is false when nobody does. index is the
// read's X-Consul-Index, usable as waitIndex to block until the next change.
func (e *Election) Leader(ctx context.Context, waitIndex uint64) (l Leader, ok bool, index uint64, err error) {
	q := (&api.QueryOptions{WaitIndex: waitIndex, WaitTime: e.o.WaitTime}).WithContext(ctx)
	p, meta, err := e.c.API.KV().Get(e.o.Key, q)
	if err != nil {
		return Leader{}, false, 0, fmt.Errorf("recipe: read %s: %w", e.o.Key, err)
	}
	if p == nil || p.Session == "" {
		return Leader{}, false, meta.LastIndex, nil
	}
	return Leader{
		Sequencer: Sequencer{Key: p.Key, LockIndex: p.LockIndex, Session: p.Session, ModifyIndex: p.ModifyIndex},
		Value:     p.Value,
	}, true, meta.LastIndex, nil
}
