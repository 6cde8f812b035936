// Package gossip is an agent's membership in the LAN gossip pool: hashicorp
// serf over hashicorp memberlist (SWIM with Lifeguard), configured as Consul
// configures its LAN pool (spec/CONSUL.md §13). It reports members in the
// form the leader's catalog reconcile reads (package reconcile) and hands
// every membership change to the leader as it happens.
//
// The transport is memberlist's own UDP and TCP by default; the simulator
// passes one over its simulated network instead.
package gossip
