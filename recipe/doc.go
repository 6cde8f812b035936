// Package recipe holds client-side recipes on Consul's session and KV-lock
// API: leader election (Lock, Election), fenced writes (Client.Fence),
// counting semaphores (Semaphore) and the engine of `tenure lock`
// (subpackage lockcmd). They use github.com/hashicorp/consul/api and work
// against real Consul and against tenure; where tenure offers more (the
// X-Tenure-Lock-Delay header of SPEC S25, the sequencer a successful
// acquire names under S64, the check-sequencer txn verb of S43) they use it
// and fall back to Consul's behaviour otherwise.
//
// What the recipes promise is bounded by SPEC S49-S51: a Hold's Lost channel
// closes when the key's holder changes, the session is gone, or renewal has
// failed for one TTL, but a process can act after that (pauses, partitions),
// so a resource must check the sequencer on every write (Fence, S50).
//
// Everything that waits uses the injected Clock, and all HTTP goes through
// the *http.Client of the api.Config handed to NewClient, so a simulator can
// run the recipes on virtual time over a simulated network. The ACL token
// is the api.Config's (Token, TokenFile, or CONSUL_HTTP_TOKEN through
// api.DefaultConfig): every request, raw ones included, carries it, so a
// lock needs a token with key:write on its key and session:write on the
// agent's node, and a refusal is the 403 Consul answers, in the error.
package recipe
