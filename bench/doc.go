// Package bench holds the measurements and long runs that start tenure (or
// Consul) as processes, apart from the tests of the tenure binary. They are
// tests gated by environment variables, which the Makefile sets:
//
//	make bench-cluster   TestBenchCluster   lock throughput, CPU per cycle, hand-off (TENURE_BENCH_CLUSTER)
//	make bench-scale     TestBenchScale     memory and blocking reads at scale (TENURE_BENCH_SCALE)
//	make bench-trace     TestBenchTrace     one client's operations across the servers' traces (TENURE_BENCH_TRACE)
//	make bench-detect    TestDetection      how soon a failed holder's session ends (TENURE_DETECT)
//	make chaos           TestCrashLoop      kill -9 and restart under load (TENURE_CHAOS_KILLS)
//
// TestCrashLoop also runs a short loop with TENURE_CLUSTER_TEST=1 (make
// test). The helpers behind the reports have unit tests of their own,
// which plain go test runs. The processes are started with
// internal/proccluster.
package bench
