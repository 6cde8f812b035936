------------------------------ MODULE Sessions ------------------------------
(***************************************************************************)
(* The Consul session and lock contract as tenure states it (spec/SPEC.md,  *)
(* clause IDs S1..S59), at the level of one replicated store seen from the  *)
(* leader, plus clients whose belief that they hold a lock can be stale.    *)
(*                                                                          *)
(* Store: a catalog (nodes, services, checks), sessions, prepared queries  *)
(* bound to sessions, KV keys with LockIndex,                               *)
(* Session and ModifyIndex, and the per-key watermark of the highest        *)
(* LockIndex ever issued, which survives delete (S41).  Every store action  *)
(* that changes something is one raft entry at index+1; entries that        *)
(* change nothing (failed acquire, identical set) are stutters and left     *)
(* out.  Time is an abstract clock: TTL deadlines and lock-delays count     *)
(* down in ticks (one tick = 10 s in the Go explorer).                      *)
(*                                                                          *)
(* Clients: each client uses one session (several clients may share one).   *)
(* A client believes it holds a key from its successful acquire until it    *)
(* releases or notices the loss; nothing forces it to notice (a pause, a    *)
(* false-positive failure), so its belief can outlive its tenure (S50).     *)
(* It writes to a fenced resource, which accepts a write only if the        *)
(* client's sequencer (Key, LockIndex, Session) is currently valid          *)
(* (S40, S43), and to an unfenced resource, which accepts anything.         *)
(*                                                                          *)
(* Ghosts: tenure[k] counts the acquisitions of k while it was free         *)
(* (absent or unheld), independently of LockIndex arithmetic; an acquire    *)
(* of a held key joins the current tenure.  A belief records the tenure it  *)
(* was formed in.  A client is a legitimate holder of k iff k is held and   *)
(* the client's belief is from k's current tenure.                          *)
(***************************************************************************)
EXTENDS Naturals, FiniteSets

CONSTANTS
    Nodes,            \* node names
    Services,         \* service IDs (unique across nodes here)
    ServiceNode,      \* [Services -> Nodes]
    Checks,           \* check IDs (unique across nodes here)
    CheckNode,        \* [Checks -> Nodes]
    CheckService,     \* [Checks -> Services \cup {None}]: the service a check belongs to (S55)
    Sessions,         \* session IDs; each is created at most once (S1)
    SessionNode,      \* [Sessions -> Nodes]
    SessionChecks,    \* [Sessions -> SUBSET Checks], checks on the session's node, node or service ones (S56)
    SessionBehavior,  \* [Sessions -> {"release", "delete"}]
    SessionTTL,       \* [Sessions -> Nat]: ticks from a reset to expiry (TTL x multiplier); 0 = none
    SessionDelay,     \* [Sessions -> Nat]: lock-delay in ticks, already capped; 0 = none
    Clients,          \* client names
    ClientSession,    \* [Clients -> Sessions]
    Queries,          \* prepared-query IDs; each is created at most once
    QuerySession,     \* [Queries -> Sessions]: the session a query is bound to (S58)
    Keys,             \* KV keys
    MaxIndex          \* bound on raft entries that change the store

None == "none"
Behaviors == {"release", "delete"}
Healths == {"passing", "warning", "critical"}

ASSUME /\ ServiceNode \in [Services -> Nodes]
       /\ CheckNode \in [Checks -> Nodes]
       /\ CheckService \in [Checks -> Services \cup {None}]
       /\ \A ch \in Checks : CheckService[ch] # None => ServiceNode[CheckService[ch]] = CheckNode[ch]
       /\ QuerySession \in [Queries -> Sessions]
       /\ SessionNode \in [Sessions -> Nodes]
       /\ SessionChecks \in [Sessions -> SUBSET Checks]
       /\ \A s \in Sessions : \A ch \in SessionChecks[s] : CheckNode[ch] = SessionNode[s]
       /\ SessionBehavior \in [Sessions -> Behaviors]
       /\ SessionTTL \in [Sessions -> Nat]
       /\ SessionDelay \in [Sessions -> Nat]
       /\ ClientSession \in [Clients -> Sessions]
       /\ MaxIndex \in Nat
       /\ None \notin Sessions \cup Clients \cup Services

VARIABLES
    index,        \* highest raft index at which the store changed
    nodeUp,       \* [Nodes -> BOOLEAN]: registered
    serviceUp,    \* [Services -> BOOLEAN]: registered (S55)
    checkStatus,  \* [Checks -> Healths \cup {"gone"}]
    sessState,    \* [Sessions -> {"unborn", "live", "dead"}]
    ttlLeft,      \* [Sessions -> Nat]: ticks until the TTL deadline (leader memory, S18-S21)
    queryState,   \* [Queries -> {"unborn", "live", "dead"}] (S57, S58)
    kv,           \* [Keys -> KV record]; exists = FALSE is an absent key
    issued,       \* [Keys -> Nat]: highest LockIndex ever issued, kept across delete (S41)
    floor,        \* highest watermark a reap dropped; absent keys lock above it (S52)
    delayLeft,    \* [Keys -> Nat]: ticks of lock-delay left (leader memory, S22)
    tenure,       \* ghost [Keys -> Nat]: acquisitions of k while free, so far
    belief,       \* [Clients -> [Keys -> belief record]]
    fenced,       \* [Keys -> last write accepted by the fenced resource]
    unfenced      \* [Keys -> last write accepted by the unfenced resource]

store == <<index, nodeUp, serviceUp, checkStatus, sessState, ttlLeft, queryState, kv, issued, floor, delayLeft>>
vars == <<store, tenure, belief, fenced, unfenced>>

Absent == [exists |-> FALSE, lockIndex |-> 0, session |-> None, modifyIndex |-> 0]
NoBelief == [held |-> FALSE, lockIndex |-> 0, tenure |-> 0]
NoWrite == [writer |-> None, stale |-> FALSE]

Max(a, b) == IF a >= b THEN a ELSE b

Held(k) == kv[k].exists /\ kv[k].session # None

\* The fenced resource's test: the client's sequencer is the key's current one (S40).
SeqValid(c, k) ==
    /\ belief[c][k].held
    /\ kv[k].exists
    /\ kv[k].session = ClientSession[c]
    /\ kv[k].lockIndex = belief[c][k].lockIndex

\* Ground truth from the ghost: c acquired k in k's current, unfinished tenure.
Legit(c, k) ==
    /\ belief[c][k].held
    /\ Held(k)
    /\ belief[c][k].tenure = tenure[k]

TypeOK ==
    /\ index \in 0..MaxIndex
    /\ nodeUp \in [Nodes -> BOOLEAN]
    /\ serviceUp \in [Services -> BOOLEAN]
    /\ queryState \in [Queries -> {"unborn", "live", "dead"}]
    /\ checkStatus \in [Checks -> Healths \cup {"gone"}]
    /\ sessState \in [Sessions -> {"unborn", "live", "dead"}]
    /\ ttlLeft \in [Sessions -> Nat]
    /\ \A k \in Keys : kv[k].exists \in BOOLEAN /\ kv[k].lockIndex \in Nat
                       /\ kv[k].session \in Sessions \cup {None} /\ kv[k].modifyIndex \in Nat
    /\ issued \in [Keys -> Nat]
    /\ floor \in Nat
    /\ delayLeft \in [Keys -> Nat]
    /\ tenure \in [Keys -> Nat]
    /\ \A c \in Clients, k \in Keys : belief[c][k].held \in BOOLEAN
    /\ \A k \in Keys : fenced[k].writer \in Clients \cup {None} /\ unfenced[k].writer \in Clients \cup {None}

Init ==
    /\ index = 0
    /\ nodeUp = [n \in Nodes |-> TRUE]
    /\ serviceUp = [sv \in Services |-> TRUE]
    /\ queryState = [q \in Queries |-> "unborn"]
    /\ checkStatus = [ch \in Checks |-> "passing"]
    /\ sessState = [s \in Sessions |-> "unborn"]
    /\ ttlLeft = [s \in Sessions |-> 0]
    /\ kv = [k \in Keys |-> Absent]
    /\ issued = [k \in Keys |-> 0]
    /\ floor = 0
    /\ delayLeft = [k \in Keys |-> 0]
    /\ tenure = [k \in Keys |-> 0]
    /\ belief = [c \in Clients |-> [k \in Keys |-> NoBelief]]
    /\ fenced = [k \in Keys |-> NoWrite]
    /\ unfenced = [k \in Keys |-> NoWrite]

(***************************************************************************)
(* Invalidation of the sessions in S, atomically with its trigger, at       *)
(* index+1 (S15): release or delete every key they hold (S16, S17), arm     *)
(* lock-delay on each (S22) and delete the prepared queries bound to them   *)
(* (S58).  The caller sets index'.                                          *)
(***************************************************************************)
Invalidate(S) ==
    LET Lost(k) == kv[k].exists /\ kv[k].session \in S
    IN /\ sessState' = [s \in Sessions |-> IF s \in S THEN "dead" ELSE sessState[s]]
       /\ ttlLeft' = [s \in Sessions |-> IF s \in S THEN 0 ELSE ttlLeft[s]]
       /\ queryState' = [q \in Queries |->
                   IF queryState[q] = "live" /\ QuerySession[q] \in S THEN "dead" ELSE queryState[q]]
       /\ kv' = [k \in Keys |->
                   IF ~Lost(k) THEN kv[k]
                   ELSE IF SessionBehavior[kv[k].session] = "delete" THEN Absent
                   ELSE [kv[k] EXCEPT !.session = None, !.modifyIndex = index + 1]]
       /\ delayLeft' = [k \in Keys |->
                   IF Lost(k) THEN Max(delayLeft[k], SessionDelay[kv[k].session])
                   ELSE delayLeft[k]]

LiveSessions == {s \in Sessions : sessState[s] = "live"}

----------------------------------------------------------------------------
(* Store actions: each is one raft entry at index+1.                        *)

CreateSession(s) ==
    /\ index < MaxIndex
    /\ sessState[s] = "unborn"
    /\ nodeUp[SessionNode[s]]
    /\ \A ch \in SessionChecks[s] : checkStatus[ch] \in {"passing", "warning"}    \* S6
    /\ sessState' = [sessState EXCEPT ![s] = "live"]
    /\ ttlLeft' = [ttlLeft EXCEPT ![s] = SessionTTL[s]]
    /\ index' = index + 1
    /\ UNCHANGED <<nodeUp, serviceUp, checkStatus, queryState, kv, issued, floor, delayLeft, tenure, belief, fenced, unfenced>>

\* Explicit destroy (S13).
DestroySession(s) ==
    /\ index < MaxIndex
    /\ sessState[s] = "live"
    /\ Invalidate({s})
    /\ index' = index + 1
    /\ UNCHANGED <<nodeUp, serviceUp, checkStatus, issued, floor, tenure, belief, fenced, unfenced>>

\* The leader's TTL timer fires: the same raft entry as a destroy (S14).
ExpireSession(s) ==
    /\ index < MaxIndex
    /\ sessState[s] = "live"
    /\ SessionTTL[s] > 0
    /\ ttlLeft[s] = 0
    /\ Invalidate({s})
    /\ index' = index + 1
    /\ UNCHANGED <<nodeUp, serviceUp, checkStatus, issued, floor, tenure, belief, fenced, unfenced>>

\* A check changes status; critical invalidates the sessions bound to it in
\* the same entry, warning does not (S12, S48, S56).  A check of a service
\* that is gone cannot be written (S55).
SetCheck(ch, st) ==
    /\ index < MaxIndex
    /\ nodeUp[CheckNode[ch]]
    \* IF, not \/: TLC splits a disjunction in an action into branches and
    \* would evaluate serviceUp[None] for a node check.
    /\ IF CheckService[ch] = None THEN TRUE ELSE serviceUp[CheckService[ch]]
    /\ checkStatus[ch] # st
    /\ checkStatus' = [checkStatus EXCEPT ![ch] = st]
    /\ Invalidate(IF st = "critical"
                  THEN {s \in LiveSessions : ch \in SessionChecks[s]}
                  ELSE {})
    /\ index' = index + 1
    /\ UNCHANGED <<nodeUp, serviceUp, issued, floor, tenure, belief, fenced, unfenced>>

\* A node leaves the catalog with its services, its checks and every session
\* on it (S10, S55).
DeregisterNode(n) ==
    /\ index < MaxIndex
    /\ nodeUp[n]
    /\ nodeUp' = [nodeUp EXCEPT ![n] = FALSE]
    /\ serviceUp' = [sv \in Services |-> IF ServiceNode[sv] = n THEN FALSE ELSE serviceUp[sv]]
    /\ checkStatus' = [ch \in Checks |-> IF CheckNode[ch] = n THEN "gone" ELSE checkStatus[ch]]
    /\ Invalidate({s \in LiveSessions : SessionNode[s] = n})
    /\ index' = index + 1
    /\ UNCHANGED <<issued, floor, tenure, belief, fenced, unfenced>>

\* A service leaves the catalog with its checks; every session bound to one
\* of them is invalidated in the same entry, as by a check deregistration
\* (S11, S55, S56).
DeregisterService(sv) ==
    LET Gone == {ch \in Checks : CheckService[ch] = sv}
    IN /\ index < MaxIndex
       /\ serviceUp[sv]
       /\ serviceUp' = [serviceUp EXCEPT ![sv] = FALSE]
       /\ checkStatus' = [ch \in Checks |-> IF ch \in Gone THEN "gone" ELSE checkStatus[ch]]
       /\ Invalidate({s \in LiveSessions : SessionChecks[s] \cap Gone # {}})
       /\ index' = index + 1
       /\ UNCHANGED <<nodeUp, issued, floor, tenure, belief, fenced, unfenced>>

\* A prepared query bound to a live session is created (S57); it is deleted
\* only with its session here (S58).
CreateQuery(q) ==
    /\ index < MaxIndex
    /\ queryState[q] = "unborn"
    /\ sessState[QuerySession[q]] = "live"
    /\ queryState' = [queryState EXCEPT ![q] = "live"]
    /\ index' = index + 1
    /\ UNCHANGED <<nodeUp, serviceUp, checkStatus, sessState, ttlLeft, kv, issued, floor, delayLeft, tenure, belief, fenced, unfenced>>

(***************************************************************************)
(* Acquire by client c with its session (S26-S30).  The leader refuses it   *)
(* before raft while k's lock-delay is armed (S22); a refused or failed     *)
(* acquire changes nothing and is omitted.  Acquiring a free key starts a   *)
(* tenure and issues max(LockIndex, watermark) + 1 (S41).  Acquire by the   *)
(* session that already holds k writes an identical value: the store is     *)
(* unchanged (S28, S37), the client joins the current tenure.               *)
(***************************************************************************)
Acquire(c, k) ==
    LET s == ClientSession[c]
        e == kv[k]
        li == Max(Max(e.lockIndex, issued[k]), floor) + 1
    IN /\ index < MaxIndex
       /\ sessState[s] = "live"
       /\ ~belief[c][k].held
       /\ delayLeft[k] = 0
       /\ e.session \in {None, s}
       /\ IF e.session = None
          THEN /\ kv' = [kv EXCEPT ![k] = [exists |-> TRUE, lockIndex |-> li, session |-> s, modifyIndex |-> index + 1]]
               /\ issued' = [issued EXCEPT ![k] = li]
               /\ tenure' = [tenure EXCEPT ![k] = tenure[k] + 1]
               /\ belief' = [belief EXCEPT ![c][k] = [held |-> TRUE, lockIndex |-> li, tenure |-> tenure[k] + 1]]
               /\ index' = index + 1
               /\ UNCHANGED <<nodeUp, serviceUp, checkStatus, sessState, ttlLeft, queryState, floor, delayLeft>>
          ELSE /\ belief' = [belief EXCEPT ![c][k] = [held |-> TRUE, lockIndex |-> e.lockIndex, tenure |-> tenure[k]]]
               /\ UNCHANGED <<store, tenure>>
       /\ UNCHANGED <<fenced, unfenced>>

\* Release of a key the client believes it holds, naming its session (S31).
\* It succeeds whenever that session holds k, even in another client's tenure.
Release(c, k) ==
    /\ index < MaxIndex
    /\ belief[c][k].held
    /\ kv[k].exists
    /\ kv[k].session = ClientSession[c]
    /\ kv' = [kv EXCEPT ![k].session = None, ![k].modifyIndex = index + 1]
    /\ belief' = [belief EXCEPT ![c][k] = NoBelief]
    /\ index' = index + 1
    /\ UNCHANGED <<nodeUp, serviceUp, checkStatus, sessState, ttlLeft, queryState, issued, floor, delayLeft, tenure, fenced, unfenced>>

\* A plain set by anyone.  Every write in this model carries the same value,
\* so a set of an existing key changes nothing (S37); only creation remains.
\* A created key has LockIndex 0; the watermark is untouched (S33, S41).
SetKey(k) ==
    /\ index < MaxIndex
    /\ ~kv[k].exists
    /\ kv' = [kv EXCEPT ![k] = [exists |-> TRUE, lockIndex |-> 0, session |-> None, modifyIndex |-> index + 1]]
    /\ index' = index + 1
    /\ UNCHANGED <<nodeUp, serviceUp, checkStatus, sessState, ttlLeft, queryState, issued, floor, delayLeft, tenure, belief, fenced, unfenced>>

\* Delete by anyone, even of a locked key: no session check, no lock-delay,
\* the session lives on, the watermark stays (S36, S23).
DeleteKey(k) ==
    /\ index < MaxIndex
    /\ kv[k].exists
    /\ kv' = [kv EXCEPT ![k] = Absent]
    /\ index' = index + 1
    /\ UNCHANGED <<nodeUp, serviceUp, checkStatus, sessState, ttlLeft, queryState, issued, floor, delayLeft, tenure, belief, fenced, unfenced>>

\* A reap forgets the watermarks of deleted keys, raising the floor to every
\* one it drops (S52).  It is a raft entry that changes no table index, so
\* index stays.  tenure reaps only deletions older than a window; here a reap
\* may come at any time after the delete, which covers every later one.
Reap ==
    LET Gone == {k \in Keys : ~kv[k].exists /\ issued[k] > 0}
    IN /\ Gone # {}
       /\ floor' = Max(floor, CHOOSE m \in {issued[k] : k \in Gone} : \A k \in Gone : issued[k] <= m)
       /\ issued' = [k \in Keys |-> IF k \in Gone THEN 0 ELSE issued[k]]
       /\ UNCHANGED <<index, nodeUp, serviceUp, checkStatus, sessState, ttlLeft, queryState, kv, delayLeft, tenure, belief, fenced, unfenced>>

----------------------------------------------------------------------------
(* Actions outside raft: timers, renewals, clients and resources.           *)

\* Renew resets the leader's TTL timer; no raft entry (S20).
RenewSession(s) ==
    /\ sessState[s] = "live"
    /\ SessionTTL[s] > 0
    /\ ttlLeft[s] < SessionTTL[s]
    /\ ttlLeft' = [ttlLeft EXCEPT ![s] = SessionTTL[s]]
    /\ UNCHANGED <<index, nodeUp, serviceUp, checkStatus, sessState, queryState, kv, issued, floor, delayLeft, tenure, belief, fenced, unfenced>>

\* One tick of the leader's clock, taken only while something counts down.
Tick ==
    /\ \/ \E s \in Sessions : ttlLeft[s] > 0
       \/ \E k \in Keys : delayLeft[k] > 0
    /\ ttlLeft' = [s \in Sessions |-> IF ttlLeft[s] > 0 THEN ttlLeft[s] - 1 ELSE 0]
    /\ delayLeft' = [k \in Keys |-> IF delayLeft[k] > 0 THEN delayLeft[k] - 1 ELSE 0]
    /\ UNCHANGED <<index, nodeUp, serviceUp, checkStatus, sessState, queryState, kv, issued, floor, tenure, belief, fenced, unfenced>>

\* A client learns (from its monitor) that its sequencer is stale and stops
\* believing.  It may also never learn.
Notice(c, k) ==
    /\ belief[c][k].held
    /\ ~SeqValid(c, k)
    /\ belief' = [belief EXCEPT ![c][k] = NoBelief]
    /\ UNCHANGED <<store, tenure, fenced, unfenced>>

\* The fenced resource checks the sequencer atomically with the write (S43).
WriteFenced(c, k) ==
    /\ belief[c][k].held
    /\ SeqValid(c, k)
    /\ fenced' = [fenced EXCEPT ![k] = [writer |-> c, stale |-> ~Legit(c, k)]]
    /\ UNCHANGED <<store, tenure, belief, unfenced>>

\* The unfenced resource trusts the client's belief.
WriteUnfenced(c, k) ==
    /\ belief[c][k].held
    /\ unfenced' = [unfenced EXCEPT ![k] = [writer |-> c, stale |-> ~Legit(c, k)]]
    /\ UNCHANGED <<store, tenure, belief, fenced>>

Next ==
    \/ \E s \in Sessions : CreateSession(s)
    \/ \E s \in Sessions : DestroySession(s)
    \/ \E s \in Sessions : ExpireSession(s)
    \/ \E ch \in Checks, st \in Healths : SetCheck(ch, st)
    \/ \E n \in Nodes : DeregisterNode(n)
    \/ \E sv \in Services : DeregisterService(sv)
    \/ \E q \in Queries : CreateQuery(q)
    \/ \E c \in Clients, k \in Keys : Acquire(c, k)
    \/ \E c \in Clients, k \in Keys : Release(c, k)
    \/ \E k \in Keys : SetKey(k)
    \/ \E k \in Keys : DeleteKey(k)
    \/ Reap
    \/ \E s \in Sessions : RenewSession(s)
    \/ Tick
    \/ \E c \in Clients, k \in Keys : Notice(c, k)
    \/ \E c \in Clients, k \in Keys : WriteFenced(c, k)
    \/ \E c \in Clients, k \in Keys : WriteUnfenced(c, k)

Spec == Init /\ [][Next]_vars

----------------------------------------------------------------------------
(* Invariants that hold (S49 and the tenure guarantees).                    *)

\* At most one session holds a key: every legitimate holder shares one session.
MutualExclusion ==
    \A k \in Keys, c1, c2 \in Clients :
        Legit(c1, k) /\ Legit(c2, k) => ClientSession[c1] = ClientSession[c2]

\* No lock is held by a session that is not live (S15-S17).
HolderLive ==
    \A k \in Keys : Held(k) => sessState[kv[k].session] = "live"

\* A live session's bound checks, node or service ones, are registered and
\* not critical: a check that goes critical or is deregistered, alone or
\* with its service or its node, takes its sessions in that step (S56).
BoundChecksHealthy ==
    \A s \in Sessions : sessState[s] = "live" =>
        \A ch \in SessionChecks[s] : checkStatus[ch] \in {"passing", "warning"}

\* A live prepared query is bound to a live session: invalidation deletes
\* the session's queries in its own step (S58).
QueryBoundLive ==
    \A q \in Queries : queryState[q] = "live" => sessState[QuerySession[q]] = "live"

\* A key's LockIndex was issued, and a held key has one (S41).
LockIndexIssued ==
    \A k \in Keys : kv[k].exists =>
        /\ kv[k].lockIndex <= issued[k]
        /\ (kv[k].session # None => kv[k].lockIndex >= 1)

\* A sequencer names one tenure only: two beliefs with the same sequencer are
\* from the same tenure, and a valid sequencer is from the current one (S41).
SequencerNeverReissued ==
    /\ \A k \in Keys, c1, c2 \in Clients :
          /\ belief[c1][k].held /\ belief[c2][k].held
          /\ ClientSession[c1] = ClientSession[c2]
          /\ belief[c1][k].lockIndex = belief[c2][k].lockIndex
          => belief[c1][k].tenure = belief[c2][k].tenure
    /\ \A k \in Keys, c \in Clients : SeqValid(c, k) => belief[c][k].tenure = tenure[k]

\* No acquire while a key's lock-delay is armed: armed keys are unheld (S22).
LockDelayRespected ==
    \A k \in Keys : delayLeft[k] > 0 => ~Held(k)

\* ModifyIndex of a live key is a used index (S37).
ModifyIndexBounded ==
    \A k \in Keys : kv[k].exists => kv[k].modifyIndex \in 1..index

\* The headline (S50): the fenced resource never accepted a stale holder's write.
FencedNoStaleWrite ==
    \A k \in Keys : ~fenced[k].stale

(* Action properties (checked by TLC as PROPERTY, by the explorer per step). *)

\* LockIndex never falls while a key exists; the watermark never falls, except
\* that a reap moves an absent key's watermark into the floor, which never
\* falls either (S33, S41, S52).
LockIndexMonotonic ==
    [][/\ floor' >= floor
       /\ \A k \in Keys :
          /\ \/ issued'[k] >= issued[k]
             \/ ~kv[k].exists /\ issued'[k] = 0 /\ floor' >= issued[k]
          /\ (kv[k].exists /\ kv'[k].exists => kv'[k].lockIndex >= kv[k].lockIndex)]_vars

\* A dead session's keys are released in place (release) or gone (delete):
\* delete behaviour leaves no orphan (S16, S17); either way the key's
\* lock-delay is armed for at least the session's LockDelay (S22).
InvalidationEffects ==
    [][\A k \in Keys :
          (Held(k) /\ sessState'[kv[k].session] = "dead") =>
              /\ IF SessionBehavior[kv[k].session] = "delete"
                 THEN ~kv'[k].exists
                 ELSE /\ kv'[k].exists /\ kv'[k].session = None
                      /\ kv'[k].lockIndex = kv[k].lockIndex
              /\ delayLeft'[k] >= SessionDelay[kv[k].session]]_vars

(* Properties that fail on purpose: belief and unfenced writes are unsafe (S50). *)

\* Two clients of different sessions never both believe they hold a key.
BeliefExclusive ==
    \A k \in Keys, c1, c2 \in Clients :
        belief[c1][k].held /\ belief[c2][k].held => ClientSession[c1] = ClientSession[c2]

\* The unfenced resource never accepted a stale holder's write.
UnfencedNoStaleWrite ==
    \A k \in Keys : ~unfenced[k].stale

=============================================================================
