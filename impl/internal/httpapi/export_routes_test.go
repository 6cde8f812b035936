package httpapi

import "sort"

// EveryRoute lists, as "METHOD pattern", every endpoint a server agent's
// front answers: the server's tables, the local agent's (with reload) and
// the operational ones, including the two the operational handler decides
// and the handler behind it answers. A prefix route's pattern ends in "/".
// The ACL sweep (anonymous_sweep_test.go) must cover each.
func EveryRoute() []string {
	h := &handler{}
	l := &localHandler{reload: func() error { return nil }}
	o := &opsHandler{}
	var out []string
	for _, table := range [][]route{h.routeTable(), h.aclRoutes(), h.coordinateRoutes(), l.routeTable(), o.routeTable()} {
		for _, r := range table {
			for _, m := range r.methods {
				out = append(out, m+" "+r.path)
			}
		}
	}
	out = append(out, "GET /v1/agent/metrics", "GET /debug/pprof/")
	sort.Strings(out)
	return out
}
