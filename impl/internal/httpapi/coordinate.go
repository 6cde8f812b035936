package httpapi

import (
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/tenurekv/tenure/acl"
	"github.com/tenurekv/tenure/impl/internal/server"
	"github.com/tenurekv/tenure/model"
)

// Network coordinates (S89, CONSUL.md §22): the four /v1/coordinate
// endpoints. Updates are queued on the leader, which writes them through
// raft a period later (server.CoordinateQueue); reads answer from the
// replicated table.

// defaultCoordinateDims is serf's Vivaldi dimensionality, which every
// Consul and tenure agent uses; an update of another size is refused.
const defaultCoordinateDims = 8

// coordJSON is serf's coordinate.Coordinate on the wire.
type coordJSON struct {
	Vec        []float64
	Error      float64
	Adjustment float64
	Height     float64
}

// coordinateJSON is one entry of a coordinate read.
type coordinateJSON struct {
	Node    string
	Segment string
	Coord   coordJSON
}

// coordinateUpdateJSON is PUT /v1/coordinate/update's body.
type coordinateUpdateJSON struct {
	Datacenter string
	Node       string
	Segment    string
	Coord      *coordJSON
}

// datacenterMapJSON is one entry of GET /v1/coordinate/datacenters.
type datacenterMapJSON struct {
	Datacenter  string
	AreaID      string
	Coordinates []coordinateJSON
}

func (h *handler) coordinateRoutes() []route {
	return []route{
		{"/v1/coordinate/datacenters", false, []string{get}, h.coordinateDatacenters},
		{"/v1/coordinate/nodes", false, []string{get}, h.coordinateNodes},
		{"/v1/coordinate/node/", true, []string{get}, h.coordinateNode},
		{"/v1/coordinate/update", false, []string{put}, h.coordinateUpdate},
	}
}

// coordinatesOff is Consul's answer on every coordinate endpoint of an
// agent with disable_coordinates.
func (h *handler) coordinatesOff() error {
	if h.opts.DisableCoordinates {
		return errorf(http.StatusUnauthorized, "Coordinate support disabled")
	}
	return nil
}

func toCoordJSON(c model.Coord) coordJSON {
	vec := c.Vec
	if vec == nil {
		vec = []float64{}
	}
	return coordJSON{Vec: vec, Error: c.Error, Adjustment: c.Adjustment, Height: c.Height}
}

// coordinateUpdate is PUT /v1/coordinate/update: 200 with no body once the
// leader has queued the update. The coordinate is stored with the next
// flush, and only if the node is in the catalog then (S89).
func (h *handler) coordinateUpdate(c *call) error {
	if err := h.coordinatesOff(); err != nil {
		return err
	}
	var b coordinateUpdateJSON
	body, err := decodeJSONBody(c, &b)
	if err != nil {
		return err
	}
	if err := h.checkDC(b.Datacenter); err != nil {
		return err
	}
	// Consul accepts an update without a node (and drops it later) and
	// fails on one without a coordinate; tenure refuses both (S89).
	switch {
	case b.Node == "":
		return errorf(http.StatusBadRequest, "Must provide node")
	case b.Coord == nil:
		return errorf(http.StatusBadRequest, "Must provide coordinate")
	}
	for _, f := range []struct{ what, value string }{{"Node name", b.Node}, {"Segment", b.Segment}} {
		if err := checkLen(f.what, f.value, maxNameLen); err != nil {
			return err
		}
	}
	if here, err := h.leaderHere(c, body); err != nil || !here {
		return err
	}
	u := model.Coordinate{Node: b.Node, Segment: b.Segment,
		Coord: model.Coord{Vec: b.Coord.Vec, Error: b.Coord.Error, Adjustment: b.Coord.Adjustment, Height: b.Coord.Height}}
	dims := h.opts.CoordinateDims
	if dims == 0 {
		dims = defaultCoordinateDims
	}
	switch {
	case len(u.Coord.Vec) != dims:
		// Consul checks finiteness first, but JSON cannot carry a NaN or
		// an infinity, so only the size can be wrong here.
		return h.rejection(&model.Error{Kind: model.ErrInvalid, Msg: "incompatible coordinate"})
	case !u.Coord.Valid():
		return h.rejection(&model.Error{Kind: model.ErrInvalid, Msg: "invalid coordinate"})
	}
	if err := h.allowed(c, acl.ResourceNode, b.Node, acl.AccessWrite); err != nil {
		return err
	}
	q, ok := h.b.(server.CoordinateQueue)
	if !ok {
		return errorf(http.StatusInternalServerError, "this server does not store coordinates")
	}
	if err := q.QueueCoordinate(u); err != nil {
		return h.applyFailure(err)
	}
	c.w.Header().Set("Content-Type", "application/json; charset=utf-8")
	c.w.WriteHeader(http.StatusOK)
	return nil
}

// coordinateNodes is GET /v1/coordinate/nodes: every coordinate the
// caller may read (node:read), sorted by node, narrowed to ?segment when
// given.
func (h *handler) coordinateNodes(c *call) error {
	if err := h.coordinatesOff(); err != nil {
		return err
	}
	q, err := parseQuery(c.query())
	if err != nil {
		return err
	}
	return h.serveRead(c, q, func(s *model.State) view {
		a, err := h.authz(c, s)
		if err != nil {
			return view{fail: err}
		}
		all := s.CoordinateList()
		out := []coordinateJSON{}
		for _, co := range all {
			if !a.Allowed(acl.ResourceNode, co.Node, acl.AccessRead) {
				continue
			}
			if seg, ok := segmentParam(c.query()); ok && co.Segment != seg {
				continue
			}
			out = append(out, coordinateJSON{Node: co.Node, Segment: co.Segment, Coord: toCoordJSON(co.Coord)})
		}
		return view{index: s.Tables().Coordinates, body: out, filtered: !allReadable(a, all)}
	})
}

func allReadable(a *acl.Authorizer, all []model.Coordinate) bool {
	for _, co := range all {
		if !a.Allowed(acl.ResourceNode, co.Node, acl.AccessRead) {
			return false
		}
	}
	return true
}

// segmentParam is ?segment, which narrows a read even when empty.
func segmentParam(v url.Values) (string, bool) {
	seg, ok := v["segment"]
	if !ok || len(seg) == 0 {
		return "", false
	}
	return seg[0], true
}

// coordinateNode is GET /v1/coordinate/node/<node>: the node's
// coordinates, or a bare 404 when it has none; node:read on it is
// required, as Consul asks before it reads.
func (h *handler) coordinateNode(c *call) error {
	if err := h.coordinatesOff(); err != nil {
		return err
	}
	q, err := parseQuery(c.query())
	if err != nil {
		return err
	}
	return h.serveRead(c, q, func(s *model.State) view {
		// Decided on the state the read is served from, before it blocks.
		a, err := h.authz(c, s)
		if err == nil {
			err = aclFailure(a.Check(acl.ResourceNode, c.arg, acl.AccessRead))
		}
		if err != nil {
			return view{fail: err}
		}
		set := s.NodeCoordinates(c.arg)
		out := []coordinateJSON{}
		for _, seg := range slices.Sorted(maps.Keys(set)) {
			if want, ok := segmentParam(c.query()); ok && seg != want {
				continue
			}
			out = append(out, coordinateJSON{Node: c.arg, Segment: seg, Coord: toCoordJSON(set[seg])})
		}
		if len(out) == 0 {
			// Consul blocks on ?index, then answers a bare 404; its index
			// headers come with it when the client accepts gzip, as Go's
			// and so consul/api's do (CONSUL.md §22).
			return view{index: s.Tables().Coordinates, status: http.StatusNotFound}
		}
		return view{index: s.Tables().Coordinates, body: out}
	})
}

// coordinateDatacenters is GET /v1/coordinate/datacenters: this
// datacenter, with the coordinates of its servers (the nodes carrying the
// consul service). tenure has no WAN pool, so a server's LAN coordinate
// stands in for its WAN one, and a server yet without one shows the
// coordinate serf starts from.
func (h *handler) coordinateDatacenters(c *call) error {
	if err := h.coordinatesOff(); err != nil {
		return err
	}
	if local, err := h.readHere(c, queryOpts{mode: modeStale}, nil); err != nil || !local {
		return err
	}
	out := datacenterMapJSON{Datacenter: h.opts.Datacenter, AreaID: "wan", Coordinates: []coordinateJSON{}}
	dims := h.opts.CoordinateDims
	if dims == 0 {
		dims = defaultCoordinateDims
	}
	h.b.Read(func(s *model.State) {
		for _, sv := range s.ServiceInstances("consul") {
			co, ok := s.NodeCoordinates(sv.Node.Name)[""]
			if !ok {
				co = model.Coord{Vec: make([]float64, dims), Error: 1.5, Height: 1e-5}
			}
			out.Coordinates = append(out.Coordinates, coordinateJSON{Node: sv.Node.Name, Coord: toCoordJSON(co)})
		}
	})
	slices.SortFunc(out.Coordinates, func(a, b coordinateJSON) int { return strings.Compare(a.Node, b.Node) })
	return writeJSON(c, http.StatusOK, []datacenterMapJSON{out})
}
