// Package reconcile decides the catalog writes that bring the catalog in
// line with gossip membership, as Consul's leader does (spec/CONSUL.md §13):
//
//   - an alive member is registered with serfHealth passing;
//   - a failed member's serfHealth goes critical, which invalidates the
//     sessions bound to it through the ordinary check path (S12);
//   - a member that left, or was reaped, is deregistered, which invalidates
//     every session on its node (S10);
//   - a catalog node that has a serfHealth check but is no gossip member at
//     all is deregistered as reaped.
//
// The decisions are pure functions of the catalog state and a member, so
// they are tested over datadriven scripts (testdata/*.txt) with no network;
// the leader (package server) proposes what they return.
package reconcile
