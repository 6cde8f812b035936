package main

// Rule and path names are SPEC's (S22 lock-delay, S25 its refusal, ...).
// Each deletion's catch lists every kept bad history or scenario that only
// this rule, on this path, rejects.

const (
	rules    = "TestRejectionRules/"
	pairs    = "TestHistoryPairs/"
	stepGo   = "linearizability/step.go"
	indexGo  = "linearizability/indexes.go"
	lockGo   = "recipe/lock.go"
	semGo    = "recipe/semaphore.go"
	holdGo   = "recipe/hold.go"
	lockLoss = "TestLockHoldLossPaths/"
	semLoss  = "TestSemaphoreHoldLossPaths/"
)

// armedBy are the rule cases for each way a lock-delay gets armed, each
// followed by a stand-alone acquire of the released key.
var armedBy = []string{
	rules + "acquire granted before the delay can have ended", // a client's destroy
	rules + "acquire granted inside the lock-delay armed by deregistering the holder's node",
	rules + "acquire granted inside the lock-delay armed by deregistering the holder's check",
	rules + "acquire granted inside the lock-delay armed by a client marking the holder's check critical",
	rules + "acquire granted inside the lock-delay armed by an event destroying the holder (TTL expiry)",
	rules + "acquire granted inside the lock-delay armed by an event marking the holder's check critical",
	pairs + "lock-delay-violated/bad",
}

var deletions = []deletion{
	// The porcupine checker (linearizability/step.go): lock-delay (S22).
	{
		name: "invalidations arm no lock-delay",
		file: stepGo, find: "\t\t\tc.arm(ns, d, r)\n", repl: "\t\t\t_ = d\n",
		catch: append([]string{
			rules + "txn lock granted inside the lock-delay of a released key",
			rules + "txn lock re-creates a key deleted by invalidation inside its lock-delay",
			rules + "acquire re-creates a key deleted by invalidation inside its lock-delay",
		}, armedBy...),
	},
	{
		name: "a txn's invalidations arm no lock-delay",
		file: stepGo, find: "\t\t\tc.arm(ns, delay, r)\n", repl: "\t\t\t_ = delay\n",
		catch: []string{"TestCatalogTxnArmsLockDelay"},
	},
	{
		name: "a catalog txn's catalog ops are left out of the partitions of keys it names none of",
		file: stepGo, find: "if op.KV == nil || sc.all || (sc.keyed && touches(*op.KV, sc.key)) {",
		repl:  "if op.KV != nil && (sc.all || (sc.keyed && touches(*op.KV, sc.key))) {",
		catch: []string{"TestCatalogTxnReachesEveryPartition"},
	},
	{
		name: "a stand-alone acquire may be granted inside a lock-delay",
		file: stepGo, find: "\tif free && res.OK && !c.lossy && r.ret < t.DelayFrom {\n\t\treturn nil // acquired inside the lock-delay (S22, S49)\n\t}\n",
		catch: append([]string{rules + "acquire re-creates a key deleted by invalidation inside its lock-delay"}, armedBy...),
	},
	{
		name: "a stand-alone acquire of a deleted key is not an acquire of a free key",
		file: stepGo, find: `!had || pre.Session == ""`, repl: `had && pre.Session == ""`,
		catch: []string{rules + "acquire re-creates a key deleted by invalidation inside its lock-delay"},
	},
	{
		name: "a stand-alone acquire of a released key is not an acquire of a free key",
		file: stepGo, find: `!had || pre.Session == ""`, repl: `!had && pre.Session == ""`,
		catch: armedBy,
	},
	{
		name: "a txn lock may be granted inside a lock-delay",
		file: stepGo, find: "r.ret < s.tr[op.KV.Key].DelayFrom {", repl: "false {",
		catch: []string{
			rules + "txn lock granted inside the lock-delay of a released key",
			rules + "txn lock re-creates a key deleted by invalidation inside its lock-delay",
		},
	},
	{
		name: "a txn lock of a deleted key is not a lock of a free key",
		file: stepGo, find: `(!had || e.Session == "")`, repl: `(had && e.Session == "")`,
		catch: []string{rules + "txn lock re-creates a key deleted by invalidation inside its lock-delay"},
	},
	{
		name: "a txn lock of a released key is not a lock of a free key",
		file: stepGo, find: `(!had || e.Session == "")`, repl: `(!had && e.Session == "")`,
		catch: []string{rules + "txn lock granted inside the lock-delay of a released key"},
	},
	// Refusals for lock-delay (S22, S25).
	{
		name: "a stand-alone acquire may be refused however long after a delay",
		file: stepGo, find: `r.out.Error == "" && !r.out.OK && r.call < t.DelayTo`, repl: `r.out.Error == "" && !r.out.OK`,
		catch: []string{
			rules + "acquire refused from the instant the delay has surely ended",
			rules + "refusal long after an invalidation known to be over",
			pairs + "refused-after-delay/bad",
		},
	},
	{
		name: "a refusal of a held key may carry the lock-delay header",
		file: stepGo, find: "if r.out.LockDelayed || !sameAnswer(res, r.out) {", repl: "if !sameAnswer(res, r.out) {",
		catch: []string{rules + "lock-delay header on an acquire refused because the key is held"},
	},
	{
		name: "a txn may be refused for lock-delay however long after a delay",
		file: stepGo, find: "\tif sc.has(full[j].KV.Key) && r.call >= s.tr[full[j].KV.Key].DelayTo {\n\t\treturn nil\n\t}\n",
		catch: []string{
			rules + "txn lock refused for lock-delay from the instant it has surely ended",
			pairs + "txn-lock-delay/bad",
		},
	},
	{
		name: "a txn may be refused for lock-delay at an op that is no lock",
		file: stepGo, find: "full[j].KV.Verb != model.KVLock || ",
		catch: []string{rules + "txn set refused for lock-delay"},
	},
	{
		name: "a txn may be both committed and refused for lock-delay",
		file: stepGo, find: "full[j].KV.Verb != model.KVLock || r.out.OK {", repl: "full[j].KV.Verb != model.KVLock {",
		catch: []string{rules + "txn both committed and refused for lock-delay"},
	},
	// Invalidations reported by events (S14, S16).
	{
		name: "an event may miss a session the model invalidates",
		file: stepGo, find: "\tfor _, id := range model {\n\t\tif !slices.Contains(reported, id) {\n\t\t\treturn false\n\t\t}\n\t}\n",
		catch: []string{"TestEventInvalidatedReport"},
	},
	{
		name: "an event may name a known session the model keeps",
		file: stepGo, find: "\tfor _, id := range reported {\n\t\tif !slices.Contains(model, id) && c.known[id] {\n\t\t\treturn false\n\t\t}\n\t}\n",
		catch: []string{"TestEventInvalidatedReport"},
	},
	// Session and catalog commands (S6, S13).
	{
		name: "a server may refuse a session command the model accepts",
		file: stepGo, find: "\tcase r.out.Error != \"\" || !r.out.OK:\n\t\treturn nil // the server refused what the model accepts\n",
		catch: []string{rules + "destroy answered an error", rules + "destroy answered false"},
	},
	{
		name: "a server may do a session command the model refuses",
		file: stepGo, find: "return nil // the server did what the model refuses", repl: "return []*pstate{s}",
		catch: []string{pairs + "create-on-missing-node/bad"},
	},
	// Index readings (S35, S37).
	{
		name: "a cas that matched an unseen version binds no index",
		file: stepGo, find: "\t\tt.L, t.M = cd.l, cd.m\n",
		catch: []string{rules + "version written by a cas shows the index the cas matched"},
	},
	{
		name: "a newer version may show an older index",
		file: indexGo, find: "\t\tif m <= t.M {\n\t\t\treturn false // a newer version cannot have an older index\n\t\t}\n",
		catch: []string{rules + "a newer version shows the index of an older one", pairs + "modify-index-backwards/bad"},
	},

	// The recipes' hold-loss detection: every way the holder of a key can
	// change between two reads of a watching client (S16, S31, S36, S51),
	// and the session lost while the key still names it (S14, S18).
	{
		name: "a lock's hold survives its key's deletion",
		file: lockGo, find: "\t\tcase e == nil:\n\t\t\treturn fmt.Errorf(\"%w: %s was deleted\", ErrHolderChanged, seq.Key)\n",
		repl:  "\t\tcase e == nil:\n\t\t\treturn nil\n",
		catch: []string{lockLoss + "deleted"},
	},
	{
		name: "a lock's hold survives its key's release",
		file: lockGo, find: "\t\t\treturn fmt.Errorf(\"%w: %s was released\", ErrHolderChanged, seq.Key)\n",
		repl:  "\t\t\treturn nil\n",
		catch: []string{lockLoss + "released"},
	},
	{
		name: "a lock's hold survives another session taking its key",
		file: lockGo, find: "\t\t\treturn fmt.Errorf(\"%w: %s is held by session %s\", ErrHolderChanged, seq.Key, e.Session)\n",
		repl:  "\t\t\treturn nil\n",
		catch: []string{lockLoss + "taken by another session"},
	},
	{
		name: "a hold survives its key released and taken again by its session",
		file: lockGo, find: "\tcase e.LockIndex != seq.LockIndex:\n", repl: "\tcase false:\n",
		catch: []string{
			lockLoss + "released and taken again by its session",
			lockLoss + "deleted and taken again by its session",
			semLoss + "contender key released and taken again by its session",
		},
	},
	{
		name: "a hold survives its key deleted and taken again at the same LockIndex",
		file: lockGo, find: "\tcase seq.ModifyIndex != 0 && e.CreateIndex > seq.ModifyIndex:\n", repl: "\tcase false:\n",
		catch: []string{"TestHoldEndsWhenItsKeyIsRecreated"},
	},
	{
		name: "a slot survives its contender key taken again by its session",
		file: semGo, find: "\t\t\t\tif err := retaken(p, seq); err != nil {\n\t\t\t\t\treturn err\n\t\t\t\t}\n", repl: "\t\t\t\t_ = p\n",
		catch: []string{semLoss + "contender key released and taken again by its session"},
	},
	{
		name: "a slot survives losing its contender key",
		file: semGo, find: "\t\tif !holds(pairs, seq.Key, seq.Session) {\n\t\t\treturn fmt.Errorf(\"%w: contender key %s is no longer held by %s\", ErrHolderChanged, seq.Key, seq.Session)\n\t\t}\n",
		catch: []string{semLoss + "contender key deleted", semLoss + "contender key released"},
	},
	{
		name: "a slot survives .lock dropping its holder",
		file: semGo, find: "\t\tif !rec.Holders[seq.Session] {\n\t\t\treturn fmt.Errorf(\"%w: %s no longer lists %s\", ErrHolderChanged, s.lockKey, seq.Session)\n\t\t}\n",
		repl:  "\t\t_ = rec\n",
		catch: []string{semLoss + ".lock drops the holder"},
	},
	{
		name: "a slot survives an unreadable .lock",
		file: semGo, find: "\t\t_, rec, err := s.state(pairs)\n\t\tif err != nil {\n\t\t\treturn err\n\t\t}\n\t\tif !rec.Holders[seq.Session] {",
		repl:  "\t\t_, rec, err := s.state(pairs)\n\t\tif err != nil {\n\t\t\treturn nil\n\t\t}\n\t\tif !rec.Holders[seq.Session] {",
		catch: []string{semLoss + ".lock has foreign flags", semLoss + ".lock has another limit", semLoss + ".lock is not JSON"},
	},
	{
		name: "a hold survives its session's loss",
		file: holdGo, find: "\t\t\trenewLost = rn.lost\n",
		catch: []string{"TestHoldEndsWhenItsSessionIsLost/session gone", "TestHoldEndsWhenItsSessionIsLost/renews fail"},
	},
	// The registration holds (S47): each shortcut turned around, and the
	// wait that ends a hold when the registration lands.
	{
		name: "a client agent never holds a create",
		file: "impl/internal/httpapi/clientregistered.go", find: "\tif a.registered.Load() {\n", repl: "\tif !a.registered.Load() {\n",
		catch: []string{"TestClientAgentHoldsFirstCreateUntilRegistered", "TestClientAgentCreateWithoutLeader"},
	},
	{
		name: "a client agent asks the servers again after its registration",
		file: "impl/internal/httpapi/clientregistered.go", find: "\t\t\ta.registered.Store(true)\n",
		catch: []string{"TestClientAgentHoldsFirstCreateUntilRegistered"},
	},
	{
		name: "a server agent never holds a create",
		file: "impl/agent/registeredgate.go", find: "\t\tif r.URL.Path == \"/v1/session/create\" {\n", repl: "\t\tif false {\n",
		catch: []string{"TestRegisteredGateHoldsCreatesUntilRegistered", "TestRegisteredGateWithoutLeader"},
	},
	{
		name: "a server agent holds a create to the bound after its registration",
		file: "impl/agent/registeredgate.go", find: "\t\t\t\tcase <-srv.Registered():\n\t\t\t\tcase <-done:\n", repl: "\t\t\t\tcase <-done:\n",
		catch: []string{"TestRegisteredGateHoldsCreatesUntilRegistered"},
	},
}
