#!/usr/bin/env bash
# Runs TLC on every config listed in expected.json and compares its result
# (ok or the violated invariant), exit code, distinct-state count and, for a
# violation, counterexample length with the recorded ones.
#
#   TLA2TOOLS_JAR=/path/to/tla2tools.jar tla/run_tlc.sh [--write-traces]
#
# --write-traces also copies each counterexample (TLC's -dumpTrace json) over
# the trace file expected.json names, for the Go replay test.
# TLC runs with one worker so that the count at a violation is reproducible.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
if [ -z "${TLA2TOOLS_JAR:-}" ]; then
	echo "SKIP: TLA2TOOLS_JAR not set"
	exit 0
fi
if [ ! -f "$TLA2TOOLS_JAR" ]; then
	echo "run_tlc: TLA2TOOLS_JAR=$TLA2TOOLS_JAR is not a file" >&2
	exit 2
fi
write_traces=0
case "${1:-}" in
"") ;;
--write-traces) write_traces=1 ;;
*)
	echo "usage: $0 [--write-traces]" >&2
	exit 2
	;;
esac

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here"/*.tla "$here"/*.cfg "$work"/

# field LINE NAME prints NAME's value from one line of expected.json, which
# keeps one config object per line so that no JSON tool is needed.
field() {
	printf '%s\n' "$1" | sed -n "s/.*\"$2\": *\"\{0,1\}\([^\",}]*\)\"\{0,1\}.*/\1/p"
}

passed=0
failed=0
while IFS= read -r line; do
	case "$line" in *'"config"'*) ;; *) continue ;; esac
	cfg=$(field "$line" config)
	want_result=$(field "$line" result)
	want_inv=$(field "$line" invariant)
	want_rc=$(field "$line" exit_code)
	want_states=$(field "$line" distinct_states)
	want_trace=$(field "$line" trace_states)
	trace_file=$(field "$line" trace)
	measured=$(field "$line" measured_by)
	name=${cfg%.cfg}
	log="$work/$name.log"

	# Only failing configs dump their trace: -dumpTrace json needs the Json
	# module (CommunityModules), which not every tla2tools.jar bundles.
	dump=()
	[ "$want_result" = violation ] && dump=(-dumpTrace json "$work/$name.trace.json")
	set +e
	(cd "$work" && java -XX:+UseParallelGC -cp "$TLA2TOOLS_JAR" tlc2.TLC \
		-workers 1 -noGenerateSpecTE -metadir "$work/meta-$name" \
		"${dump[@]}" -config "$cfg" MCSessions) >"$log" 2>&1
	rc=$?
	set -e

	states=$(sed -n 's/.* \([0-9][0-9]*\) distinct states found.*/\1/p' "$log" | tail -1)
	inv=$(sed -n 's/^Error: Invariant \([A-Za-z0-9_]*\) is violated.*/\1/p' "$log" | head -1)
	trace=$(grep -c '^State [0-9][0-9]*:' "$log" || true)
	result=ok
	[ -n "$inv" ] && result=violation

	problems=""
	[ "$rc" = "$want_rc" ] || problems="$problems exit code $rc, want $want_rc;"
	[ "$result" = "$want_result" ] || problems="$problems result $result, want $want_result;"
	[ "$inv" = "$want_inv" ] || problems="$problems invariant '$inv', want '$want_inv';"
	if [ "$want_result" = violation ] && [ "$measured" = explorer ]; then
		# The explorer records the end of the violation's BFS level; TLC
		# stops inside it, so only an upper bound can be checked.
		[ -n "$states" ] && [ "$states" -le "$want_states" ] ||
			problems="$problems distinct states '$states', want at most $want_states;"
	else
		[ "$states" = "$want_states" ] || problems="$problems distinct states '$states', want $want_states;"
	fi
	if [ "$want_result" = violation ]; then
		[ "$trace" = "$want_trace" ] || problems="$problems trace of $trace states, want $want_trace;"
	fi

	if [ -z "$problems" ]; then
		echo "ok   $cfg: $result${inv:+ ($inv)}, exit $rc, $states distinct states"
		[ "$measured" = explorer ] &&
			echo "     expected.json has the explorer's count: record $states with \"measured_by\": \"tlc\""
		passed=$((passed + 1))
		if [ "$write_traces" = 1 ] && [ -n "$trace_file" ]; then
			cp "$work/$name.trace.json" "$here/$trace_file"
			echo "     wrote $trace_file"
		fi
	else
		echo "FAIL $cfg:$problems"
		tail -n 20 "$log" | sed 's/^/     | /'
		failed=$((failed + 1))
	fi
done <"$here/expected.json"

echo "tlc: $passed passed, $failed failed"
[ "$failed" = 0 ]
