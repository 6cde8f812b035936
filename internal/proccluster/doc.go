// Package proccluster runs Consul-style agents as real processes on
// 127.0.0.1: tenure's binary or Consul's own, since both take Consul's agent
// flags. It is what the multi-process tests, the benchmarks, the chaos and
// detection runs and the conformance suite's client agents start their
// agents with.
//
// The pieces, from the bottom up:
//
//   - FreePorts and Agent: an agent's listeners and its command line.
//   - Start and Proc: one agent process, killed (-9), stopped (SIGTERM),
//     paused (SIGSTOP) or resumed, with the end of its output kept for
//     failure messages.
//   - Up and Cluster: servers that form a cluster by -bootstrap-expect and
//     -retry-join, and client agents joined to them, for a test; it waits
//     until they serve and stops them when the test ends.
//   - BuildTenure and Main: tenure's binary, built once per test binary.
//
// Everything listens on 127.0.0.1 only.
package proccluster
