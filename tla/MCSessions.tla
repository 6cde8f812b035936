----------------------------- MODULE MCSessions -----------------------------
(***************************************************************************)
(* Small constant sets for TLC.  Each MCSessions_*.cfg picks one scenario  *)
(* by substituting these definitions for Sessions' constants.  The Go      *)
(* explorer mirrors them in scenario.go; equal distinct-state counts and   *)
(* the replayed TLC traces are what show the two agree.                    *)
(***************************************************************************)
EXTENDS Sessions

\* Shared catalog: two nodes, one health check each; n2 runs service w2,
\* and its check h2 belongs to w2, so sessions bound to h2 are bound to a
\* service check (S55, S56).
MC_Nodes == {"n1", "n2"}
MC_Services == {"w2"}
MC_ServiceNode == [sv \in MC_Services |-> "n2"]
MC_Checks == {"h1", "h2"}
MC_CheckNode == [ch \in MC_Checks |-> IF ch = "h1" THEN "n1" ELSE "n2"]
MC_CheckService == [ch \in MC_Checks |-> IF ch = "h2" THEN "w2" ELSE None]

\* Scenario "release": two release sessions on different nodes; s1 has a TTL
\* and a lock-delay, s2 neither; one key; one client per session; one
\* prepared query bound to s1.
Rel_Sessions == {"s1", "s2"}
Rel_SessionNode == [s \in Rel_Sessions |-> IF s = "s1" THEN "n1" ELSE "n2"]
Rel_SessionChecks == [s \in Rel_Sessions |-> IF s = "s1" THEN {"h1"} ELSE {"h2"}]
Rel_SessionBehavior == [s \in Rel_Sessions |-> "release"]
Rel_SessionTTL == [s \in Rel_Sessions |-> IF s = "s1" THEN 2 ELSE 0]
Rel_SessionDelay == [s \in Rel_Sessions |-> IF s = "s1" THEN 1 ELSE 0]
Rel_Clients == {"a", "b"}
Rel_ClientSession == [c \in Rel_Clients |-> IF c = "a" THEN "s1" ELSE "s2"]
Rel_Queries == {"q1"}
Rel_QuerySession == [q \in Rel_Queries |-> "s1"]
Rel_Keys == {"k"}

\* Scenario "delete": s1 has behaviour delete and a lock-delay and is shared
\* by clients a and a2 (so a stale belief can meet a reissued sequencer);
\* s2 has a TTL and no checks (bound to its node only, S7); one prepared
\* query bound to s2, which only TTL expiry, destroy or its node's
\* deregistration removes.
Del_Sessions == {"s1", "s2"}
Del_SessionNode == [s \in Del_Sessions |-> IF s = "s1" THEN "n1" ELSE "n2"]
Del_SessionChecks == [s \in Del_Sessions |-> IF s = "s1" THEN {"h1"} ELSE {}]
Del_SessionBehavior == [s \in Del_Sessions |-> IF s = "s1" THEN "delete" ELSE "release"]
Del_SessionTTL == [s \in Del_Sessions |-> IF s = "s1" THEN 0 ELSE 2]
Del_SessionDelay == [s \in Del_Sessions |-> IF s = "s1" THEN 1 ELSE 0]
Del_Clients == {"a", "a2", "b"}
Del_ClientSession == [c \in Del_Clients |-> IF c = "b" THEN "s2" ELSE "s1"]
Del_Queries == {"q1"}
Del_QuerySession == [q \in Del_Queries |-> "s2"]
Del_Keys == {"k"}

\* Scenario "twokeys": two keys, a release session with TTL and lock-delay,
\* a delete session without either; no prepared query (the space is the
\* largest already).
Two_Sessions == {"s1", "s2"}
Two_SessionNode == [s \in Two_Sessions |-> IF s = "s1" THEN "n1" ELSE "n2"]
Two_SessionChecks == [s \in Two_Sessions |-> IF s = "s1" THEN {"h1"} ELSE {"h2"}]
Two_SessionBehavior == [s \in Two_Sessions |-> IF s = "s1" THEN "release" ELSE "delete"]
Two_SessionTTL == [s \in Two_Sessions |-> IF s = "s1" THEN 2 ELSE 0]
Two_SessionDelay == [s \in Two_Sessions |-> IF s = "s1" THEN 1 ELSE 0]
Two_Clients == {"a", "b"}
Two_ClientSession == [c \in Two_Clients |-> IF c = "a" THEN "s1" ELSE "s2"]
Two_Queries == {}
Two_QuerySession == [q \in Two_Queries |-> "s1"]
Two_Keys == {"k1", "k2"}
=============================================================================
