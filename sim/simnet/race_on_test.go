//go:build race

package simnet

// The race detector perturbs scheduling on purpose, so replay rates measured
// under it say nothing about normal runs.
const raceEnabled = true
