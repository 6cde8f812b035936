package httpapi

import (
	"github.com/tenurekv/tenure/acl"

	"net/http"
	"strings"

	"github.com/tenurekv/tenure/impl/internal/gossip"
)

// Members is the agent's gossip pool, as the membership endpoints use it
// (package gossip's Pool). Without one they answer 501.
type Members interface {
	List() []gossip.Member
	Local() gossip.Member
	Join(addrs []string) (int, error)
	Leave() error
	ForceLeave(node string, prune bool) error
	Stats() map[string]string
}

// memberJSON is one element of /v1/agent/members, in Consul's shape.
type memberJSON struct {
	Name        string
	Addr        string
	Port        uint16
	Tags        map[string]string
	Status      int
	ProtocolMin uint8
	ProtocolMax uint8
	ProtocolCur uint8
	DelegateMin uint8
	DelegateMax uint8
	DelegateCur uint8
}

func toMemberJSON(m gossip.Member) memberJSON {
	tags := m.Tags
	if tags == nil {
		tags = map[string]string{}
	}
	return memberJSON{Name: m.Name, Addr: m.IP, Port: m.Port, Tags: tags, Status: m.SerfStatus,
		ProtocolMin: m.Protocol[0], ProtocolMax: m.Protocol[1], ProtocolCur: m.Protocol[2],
		DelegateMin: m.Delegate[0], DelegateMax: m.Delegate[1], DelegateCur: m.Delegate[2]}
}

func (h *handler) members() (Members, error) {
	if h.opts.Members == nil {
		return nil, errorf(http.StatusNotImplemented, "this agent has no gossip pool")
	}
	return h.opts.Members, nil
}

// agentMembers is GET /v1/agent/members: every member this agent's pool
// knows, failed and left ones included, as `consul members` lists them.
func (h *handler) agentMembers(c *call) error {
	ms, err := h.members()
	if err != nil {
		return err
	}
	f, err := h.filterParam(c, onMembers)
	if err != nil {
		return err
	}
	out := []memberJSON{}
	readable, dropped, err := readableOf(ms.List(), func(m gossip.Member) Permission {
		return Permission{acl.ResourceNode, m.Name, acl.AccessRead}
	}, h.agentMayAll(c))
	if err != nil {
		return err
	}
	for _, m := range readable {
		out = append(out, toMemberJSON(m))
	}
	if dropped && h.tellsFiltered(c) {
		c.w.Header().Set(filteredHeader, "true")
	}
	if out, err = keep(f, out, viewMember); err != nil {
		return err
	}
	return writeJSON(c, http.StatusOK, out)
}

// agentJoin is PUT /v1/agent/join/<address>: join the pool that address
// belongs to.
func (h *handler) agentJoin(c *call) error {
	ms, err := h.members()
	if err != nil {
		return err
	}
	if err := checkLen("address", c.arg, maxNameLen); err != nil {
		return err
	}
	if err := h.agentAllowed(c, acl.ResourceAgent, h.agentNode(c), acl.AccessWrite); err != nil {
		return err // S90
	}
	if _, err := ms.Join([]string{c.arg}); err != nil {
		return errorf(http.StatusInternalServerError, "%s", oneLine(err.Error()))
	}
	return nil
}

// agentLeave is PUT /v1/agent/leave: leave the pool gracefully, so the
// leader deregisters this node (and, for a server, removes it from raft).
func (h *handler) agentLeave(c *call) error {
	ms, err := h.members()
	if err != nil {
		return err
	}
	if err := h.agentAllowed(c, acl.ResourceAgent, h.agentNode(c), acl.AccessWrite); err != nil {
		return err // S90
	}
	if err := ms.Leave(); err != nil {
		return errorf(http.StatusInternalServerError, "%s", oneLine(err.Error()))
	}
	return nil
}

// agentForceLeave is PUT /v1/agent/force-leave/<node>[?prune]: mark a
// failed member as left. An unknown node answers 500 with Consul's text.
func (h *handler) agentForceLeave(c *call) error {
	ms, err := h.members()
	if err != nil {
		return err
	}
	if err := checkLen("node", c.arg, maxNameLen); err != nil {
		return err
	}
	if err := h.agentAllowed(c, acl.ResourceOperator, "", acl.AccessWrite); err != nil {
		return err // S90
	}
	_, prune := c.query()["prune"]
	if err := ms.ForceLeave(c.arg, prune); err != nil {
		return errorf(http.StatusInternalServerError, "%s", oneLine(err.Error()))
	}
	return nil
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
