package httpapi

import (
	"net/http"
	"strings"
)

// errNoDCPath is Consul's answer to a request for a datacenter it has no
// route to (structs.ErrNoDCPath); tenure knows only its own.
const errNoDCPath = "No path to datacenter"

// servedWithoutDC says which routes never look at ?dc, as in Consul: the
// agent's own endpoints, the datacenter list, and the catalog register and
// deregister, which take the datacenter from their body instead.
func servedWithoutDC(path string) bool {
	switch path {
	case "/v1/catalog/datacenters", "/v1/coordinate/datacenters",
		"/v1/catalog/register", "/v1/catalog/deregister":
		return true
	}
	return strings.HasPrefix(path, "/v1/agent/")
}

// withDCCheck makes every route that takes ?dc refuse a datacenter other
// than the agent's before doing anything else.
func (h *handler) withDCCheck(routes []route) []route {
	for i := range routes {
		if servedWithoutDC(routes[i].path) {
			continue
		}
		serve := routes[i].serve
		routes[i].serve = func(c *call) error {
			if err := h.checkDC(requestedDC(c)); err != nil {
				return err
			}
			return serve(c)
		}
	}
	return routes
}

// requestedDC is the datacenter a request names: ?datacenter wins over ?dc,
// as in Consul; "" names none.
func requestedDC(c *call) string {
	q := c.query()
	if dc := q.Get("datacenter"); dc != "" {
		return dc
	}
	return q.Get("dc")
}

// checkDC refuses dc unless it is empty or the agent's datacenter, compared
// exactly as Consul does (the agent's own name is lower-cased at start).
func (h *handler) checkDC(dc string) error {
	if dc == "" || dc == h.opts.Datacenter {
		return nil
	}
	return errorf(http.StatusInternalServerError, errNoDCPath)
}
