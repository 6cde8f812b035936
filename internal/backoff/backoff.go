// Package backoff is the pause between retries that tenure's loops share
// (the server's leader writes, barrier and self-registration; recipe's acquire
// and watch loops): it starts at a minimum, doubles after each failure up
// to a maximum, and a success resets it. It has no clock and no loop of its
// own, because each caller waits differently (a server clock and a stop
// channel, a recipe clock and a context, a blocking query).
package backoff

import "time"

// Doubling is one loop's retry pause. The zero value pauses 0; use New.
type Doubling struct {
	min, max, next time.Duration
}

// New returns a pause that starts at first and doubles up to limit (at
// least first).
func New(first, limit time.Duration) Doubling {
	return Doubling{min: first, max: max(first, limit), next: first}
}

// Next returns the pause to take now and doubles the following one.
func (d *Doubling) Next() time.Duration {
	n := d.next
	d.next = min(2*d.next, d.max)
	return n
}

// Reset starts over at the minimum, after a success.
func (d *Doubling) Reset() { d.next = d.min }
