package simnet

import (
	"errors"
	"fmt"
	"strings"
)

// SetDefaultLink changes the link used by every direction without an override.
func (n *Network) SetDefaultLink(l Link) error {
	if err := l.validate(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.opts.Link = l
	n.ctlLocked(Fault, "", "", fmt.Sprintf("default link %+v", l), "")
	return nil
}

// SetLink overrides the link for messages from one node to another.
func (n *Network) SetLink(from, to string, l Link) error {
	if from == "" || to == "" {
		return errors.New("simnet: SetLink: empty node name")
	}
	if err := l.validate(); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.links[linkKey{from, to}] = l
	n.ctlLocked(Fault, from, to, fmt.Sprintf("link %+v", l), "")
	return nil
}

// ResetLinks removes every per-link override.
func (n *Network) ResetLinks() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.links)
	n.ctlLocked(Fault, "", "", "reset links", "")
}

// checkSets validates two node sets for a partition.
func checkSets(a, b []string) error {
	if len(a) == 0 || len(b) == 0 {
		return errors.New("simnet: partition needs two non-empty node sets")
	}
	in := map[string]bool{}
	for _, x := range a {
		if x == "" {
			return errors.New("simnet: empty node name")
		}
		in[x] = true
	}
	for _, y := range b {
		if y == "" {
			return errors.New("simnet: empty node name")
		}
		if in[y] {
			return fmt.Errorf("simnet: node %q is on both sides of the partition", y)
		}
	}
	return nil
}

// Partition cuts both directions between every node of a and every node of b.
// Nodes not named keep their links. Cuts add up until Heal.
func (n *Network) Partition(a, b []string) error {
	if err := checkSets(a, b); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range a {
		for _, y := range b {
			n.cuts[linkKey{x, y}] = true
			n.cuts[linkKey{y, x}] = true
		}
	}
	n.ctlLocked(Fault, "", "", "partition "+strings.Join(a, ",")+" | "+strings.Join(b, ","), "")
	n.breakCutPairsLocked()
	return nil
}

// PartitionOneWay drops messages from every node of from to every node of to;
// the reverse direction still works (replies to their requests are lost).
// Connections need both directions, so those crossing the cut break.
func (n *Network) PartitionOneWay(from, to []string) error {
	if err := checkSets(from, to); err != nil {
		return err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, x := range from {
		for _, y := range to {
			n.cuts[linkKey{x, y}] = true
		}
	}
	n.ctlLocked(Fault, "", "", "one-way partition "+strings.Join(from, ",")+" -> "+strings.Join(to, ","), "")
	n.breakCutPairsLocked()
	return nil
}

// Isolate cuts a node off from every other node, including ones (such as
// clients) that appear later.
func (n *Network) Isolate(node string) error { return n.cutNode(n.isolated, node, "isolate") }

// Down switches a node off, as a power cut does: from this instant nothing
// it sends leaves and nothing reaches it, and its connections break, until
// Up. Unlike Isolate it is not a partition: Heal leaves it down.
func (n *Network) Down(node string) error { return n.cutNode(n.down, node, "down") }

// cutNode adds node to set (isolated or down) and breaks the connections
// that now cross a cut.
func (n *Network) cutNode(set map[string]bool, node, what string) error {
	if node == "" {
		return fmt.Errorf("simnet: %s: empty node name", what)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	set[node] = true
	n.ctlLocked(Fault, node, "", what, "")
	n.breakCutPairsLocked()
	return nil
}

// Up switches a node back on (Down).
func (n *Network) Up(node string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.down, node)
	n.ctlLocked(Fault, node, "", "up", "")
}

// Heal removes every partition and isolation. Link settings, pauses and
// nodes that are down stay.
func (n *Network) Heal() {
	n.mu.Lock()
	defer n.mu.Unlock()
	clear(n.cuts)
	clear(n.isolated)
	n.ctlLocked(Fault, "", "", "heal", "")
}

// Pause freezes a node's network: what it sends and what arrives for it is
// held in order until Resume.
func (n *Network) Pause(node string) error {
	if node == "" {
		return errors.New("simnet: Pause: empty node name")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.paused[node] != nil {
		return fmt.Errorf("simnet: node %q already paused", node)
	}
	n.paused[node] = new([]*envelope)
	n.ctlLocked(Fault, node, "", "pause", "")
	return nil
}

// Settle calls Options.Settle, if set: for a caller that releases other
// goroutines at one instant and wants each release's effects to happen
// before the next, as Resume does.
func (n *Network) Settle() {
	if n.opts.Settle != nil {
		n.opts.Settle()
	}
}

// Resume unfreezes a paused node: held outgoing messages leave now (with new
// latency and drop draws), then held incoming ones are delivered now, in the
// order they were held; with Options.Settle, one at a time, each settled
// before the next. The outgoing ones go first so that a stream's held
// chunks stay ahead of what the node writes in answer to a delivery.
func (n *Network) Resume(node string) error {
	n.mu.Lock()
	held := n.paused[node]
	if held == nil {
		n.mu.Unlock()
		return fmt.Errorf("simnet: node %q is not paused", node)
	}
	delete(n.paused, node)
	n.ctlLocked(Fault, node, "", fmt.Sprintf("resume (%d held)", len(*held)), "")
	var in []*envelope
	for _, e := range *held {
		if e.heldOut {
			n.routeLocked(e)
		} else {
			in = append(in, e)
		}
	}
	for _, e := range in {
		n.arriveLocked(e)
		if n.opts.Settle != nil {
			n.mu.Unlock()
			n.opts.Settle()
			n.mu.Lock()
		}
	}
	n.mu.Unlock()
	return nil
}
