// Command mutation runs mutation testing over the code that decides what
// tenure's checkers accept, and fails on a survivor nobody has explained.
//
//	go run ./mutation                 # every target in targets.go
//	go run ./mutation -only model     # one target
//
// It drives gremlins (pinned by go.mod's tool directive, run as
// `go tool gremlins`) once per target with the target's own tests, reads the
// JSON report, and prints killed, lived, not covered, efficacy and coverage
// per target. Every mutant that lived or was not covered must be listed in
// equivalents.txt with a one-line reason; one that is not makes the run exit
// 1 with its location, so a new survivor is either killed by a test or
// argued away in review.
//
// gremlins only swaps operators. The deletions in deletionlist.go cut one
// rule of a checker, or one path by which it applies, out of the source,
// and name the tests (a bad history, a hold-loss scenario) that must fail
// without it; the driver runs each through go test -overlay after the
// target's gremlins run (-deletions-only runs just them). A deletion that
// one of its tests survives fails the run; it cannot be explained away.
//
// A mutant is named by file, mutator and the source line's text (not its
// number), so unrelated edits above it do not orphan its entry. An entry that
// matches no mutant any more is reported as stale, so the file cannot rot.
//
// gremlins v0.6.0 reports the conditions of a tagless switch's case clauses
// as NOT COVERED whatever the tests do (go-gremlins/gremlins#298), so the
// driver runs those mutants itself (uncovered.go: the same operator swap, the
// package's tests, go test -overlay). Constant expressions share the bug
// (open PR #299) and are still reported as gremlins says.
//
// gremlins v0.6.0 derives each mutant's timeout from its coverage run; a warm
// build cache makes that run short enough that every mutant times out
// (go-gremlins/gremlins#267). A target whose mutants all time out is
// therefore an error, not a pass, and the driver passes a generous
// -timeout-coefficient.
package main
