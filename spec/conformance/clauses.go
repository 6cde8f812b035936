package conformance

// Status is a clause's status in spec/SPEC.md. It doubles as the name of
// a profile: the set of statuses a run checks.
type Status string

// The three clause statuses (and profile names).
const (
	Contract Status = "contract" // any correct implementation, including real Consul
	Consul   Status = "consul"   // Consul's exact wire behaviour (compat profile)
	Tenure   Status = "tenure"   // tenure's stronger guarantees and extensions
)

// The ACL profiles: the cases that need a server with ACLs on (default
// policy deny) and a management token (-token), which the other profiles
// skip. acl runs their contract clauses, against Consul or tenure alike;
// acl-consul and acl-tenure add each one's own.
const (
	ACL       Status = "acl"
	ACLConsul Status = "acl-consul"
	ACLTenure Status = "acl-tenure"
)

// parseStatus validates a profile or status name.
func parseStatus(s string) (Status, error) {
	switch Status(s) {
	case Contract, Consul, Tenure, ACL, ACLConsul, ACLTenure:
		return Status(s), nil
	}
	return "", &usageError{msg: "unknown profile " + quote(s) + " (want contract, consul, tenure, acl, acl-consul or acl-tenure)"}
}

// acl reports whether p is an ACL profile.
func (p Status) acl() bool { return p == ACL || p == ACLConsul || p == ACLTenure }

// covers reports whether a run under profile p checks clauses of status s:
// contract runs contract clauses; consul and tenure each add their own
// (acl-consul and acl-tenure likewise, for the ACL cases).
func (p Status) covers(s Status) bool {
	switch p {
	case ACLConsul:
		p = Consul
	case ACLTenure:
		p = Tenure
	}
	return s == Contract || s == p
}

// Clause is one numbered clause of spec/SPEC.md.
type clause struct {
	ID     string
	Status Status
	Title  string
}

// clauses mirrors the clause index of spec/SPEC.md. A unit test parses
// that file and fails if the two disagree, so the suite cannot drift.
var clauses = []clause{
	{"S1", Contract, "create returns a fresh ID; session fields; immutable"},
	{"S2", Contract, "create defaults"},
	{"S3", Contract, "TTL empty/0 or within [10s, 24h]"},
	{"S4", Contract, "behavior release or delete"},
	{"S5", Contract, "LockDelay above 60s stored, capped at use; 0 disables"},
	{"S6", Contract, "node registered; checks exist on node, not critical"},
	{"S7", Contract, "empty check list binds no checks"},
	{"S8", Tenure, "rejected create answers 400, changes nothing"},
	{"S9", Consul, "Consul answers 500 for create validation; small LockDelay numbers are seconds"},
	{"S10", Contract, "node deregistration invalidates its sessions"},
	{"S11", Contract, "check deregistration invalidates bound sessions"},
	{"S12", Contract, "critical invalidates; passing/warning do not"},
	{"S13", Contract, "destroy invalidates; unknown destroy is a no-op"},
	{"S14", Contract, "TTL expiry acts as destroy"},
	{"S15", Contract, "invalidation atomic with its trigger"},
	{"S16", Contract, "behavior=release keeps key contents, clears Session"},
	{"S17", Contract, "behavior=delete deletes held keys"},
	{"S18", Contract, "TTL is a lower bound from last create/renew"},
	{"S19", Consul, "TTL expiry at about TTL x 2"},
	{"S20", Contract, "renew answers [session] or 404"},
	{"S21", Contract, "new leader re-arms TTL timers"},
	{"S22", Contract, "invalidation arms lock-delay"},
	{"S23", Contract, "release/delete/set/cas never arm lock-delay"},
	{"S24", Contract, "lock-delay blocks only acquire"},
	{"S25", Tenure, "lock-delay refusal names the remaining delay"},
	{"S26", Contract, "acquire on absent key creates it, LockIndex 1"},
	{"S27", Contract, "acquire on unlocked key bumps LockIndex"},
	{"S28", Contract, "re-acquire by holder keeps LockIndex"},
	{"S29", Contract, "acquire of a held key answers false"},
	{"S30", Contract, "acquire with no/unknown session is an error"},
	{"S31", Contract, "release by holder only"},
	{"S32", Contract, "locks are advisory"},
	{"S33", Tenure, "set/cas keep LockIndex"},
	{"S34", Consul, "Consul resets LockIndex on set/cas"},
	{"S35", Contract, "cas semantics"},
	{"S36", Contract, "delete, delete-cas, recurse"},
	{"S37", Contract, "ModifyIndex monotonic; no-op writes keep it"},
	{"S38", Contract, "Value and Flags replaced on every write"},
	{"S39", Tenure, "bad input and requests over the limits answer 400/413, change nothing"},
	{"S40", Contract, "sequencer validity"},
	{"S41", Tenure, "sequencers never reissued"},
	{"S42", Contract, "txn check-session / check-index"},
	{"S43", Tenure, "txn check-sequencer"},
	{"S44", Contract, "txn atomic; 409 errors; >128 ops 413"},
	{"S45", Contract, "X-Consul-Index values"},
	{"S46", Contract, "blocking queries"},
	{"S47", Contract, "server node registered with passing serfHealth"},
	{"S48", Contract, "check status updates apply S12 atomically"},
	{"S49", Contract, "single holder; no holder during lock-delay"},
	{"S50", Contract, "stale holders can act; sequencer checks protect"},
	{"S51", Contract, "semaphore admits at most Limit holders"},
	{"S52", Tenure, "a reap never lets a sequencer be issued twice"},
	{"S53", Contract, "gossip membership reaches the catalog through the leader"},
	{"S54", Tenure, "servers join raft as voters and leave it only by leave or force-leave"},
	{"S55", Contract, "register writes node, services and checks all or nothing; service deregistration takes its checks"},
	{"S56", Contract, "sessions bind NodeChecks, ServiceChecks and legacy Checks; reads return them as created"},
	{"S57", Contract, "prepared-query writes validated; state checks in the apply"},
	{"S58", Contract, "invalidating a session deletes its prepared queries"},
	{"S59", Contract, "execute filters by service, tags, meta and health"},
	{"S60", Consul, "Consul answers refused prepared-query writes 500"},
	{"S61", Consul, "agent check, service and maintenance endpoints answer from the agent with Consul's codes"},
	{"S62", Contract, "a register replaces the node's ID, tagged addresses and meta; a node ID renames its node; live names are reserved"},
	{"S63", Contract, "an agent keeps its node record: ID, tagged addresses, and its meta beside consul-network-segment and consul-version"},
	{"S64", Tenure, "a successful acquire names its LockIndex and ModifyIndex in X-Tenure-Lock-Index and X-Tenure-Modify-Index"},
	{"S65", Tenure, "a client agent holds a session create until the leader has registered its node, for at most 10s"},
	{"S68", Contract, "a txn's node, service and check ops, with Consul's verbs and texts, all or nothing with its KV ops, invalidating as the catalog endpoints do"},
	{"S69", Tenure, "a txn's session delete invalidates the session as a destroy does, and fails for a session that does not exist"},
	{"S66", Consul, "catalog, health and agent reads keep the entries ?filter selects, by Consul's fields; a bad expression is refused"},
	{"S67", Consul, "the agent's operational endpoints (self, host, metrics, monitor) and its request log answer as Consul's"},
	{"S70", Consul, "HTTPS serves the API with Consul's tls stanza; verify_incoming refuses callers without a certificate from the CA"},
	{"S71", Consul, "the server port's TLS: first byte 3, verify_incoming, verify_outgoing, verify_server_hostname; raft only for servers"},
	{"S72", Consul, "gossip is encrypted with the keyring kept in the data dir; a member without a key of the pool is refused"},
	{"S73", Consul, "/v1/operator/keyring lists, installs, uses and removes gossip keys across the pool in consul/api's shapes"},
	{"S75", Consul, "an agent keeps its API registrations and TTL check states across a restart"},
	{"S76", Consul, "?cached reads are answered by the agent cache: X-Cache, Age, background refresh, Cache-Control"},
	{"S77", Consul, "an agent service's ContentHash, and blocking on ?hash"},
	{"S81", Consul, "a request naming another datacenter answers 500 No path to datacenter and changes nothing"},
	{"S82", Consul, "raft server IDs are node IDs; a configuration under node names converges to them"},
	{"S83", Contract, "prepared-query templates answer the names they prefix, rendered for the name"},
	{"S74", Consul, "an agent registration's fields come back as registered from the agent, catalog and health reads"},
	{"S80", Consul, "config-file services and checks are registered at start; PUT /v1/agent/reload and SIGHUP re-read them and log_level"},
	{"S84", Contract, "ACL rules: exact beats prefix, longest prefix wins, policies merge deny > write > list > read, default policy decides the rest"},
	{"S85", Contract, "sessions need session:write on their node, keys key:read/key:write; denials 403 change nothing; listings filtered"},
	{"S86", Contract, "token sources ?token, X-Consul-Token, Bearer, default, anonymous; unknown 403, root names 500; default-policy header"},
	{"S87", Contract, "builtin policies and anonymous token; bootstrap once, reset file; ACL endpoints need acl:read/acl:write"},
	{"S88", Tenure, "a refused ACL write answers 400 (413 over bounds) and takes no log entry"},
	{"S89", Consul, "network coordinates: update, node and list reads, datacenters, ?near sorting; node:write to update, node:read to read"},
	{"S90", Contract, "catalog, health, agent, operator, txn and prepared-query endpoints need Consul's permissions; reads filtered"},
	{"S91", Tenure, "a txn catalog op is decided on the stored record it touches as well as the names it carries"},
}

// clauseByID returns the clause with the given ID.
func clauseByID(id string) (clause, bool) {
	for _, c := range clauses {
		if c.ID == id {
			return c, true
		}
	}
	return clause{}, false
}
