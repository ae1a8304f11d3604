#!/usr/bin/env bats
# Conventions every tool keeps: --help, --version, usage errors.
load test_helper


@test "every tool prints --help on standard output and exits 0" {
	for t in $(tools); do
		"$t" --help >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" || { echo "$t exit $?"; return 1; }
		head -1 "$BATS_TEST_TMPDIR/out" | grep -q "^Usage: $t " || { echo "$t: no usage line"; return 1; }
		[ ! -s "$BATS_TEST_TMPDIR/err" ] || { echo "$t wrote to stderr"; return 1; }
	done
}

@test "every tool accepts -h for help" {
	for t in $(tools); do
		"$t" -h | head -1 | grep -q "^Usage: $t " || { echo "$t"; return 1; }
	done
}

@test "every tool prints its name and version with --version" {
	for t in $(tools); do
		[ "$("$t" --version)" = "$t 0.1.0" ] || { echo "$t"; return 1; }
	done
}

@test "every tool rejects an unknown option with exit 2 and a hint" {
	for t in $(tools); do
		run "$t" --no-such-option
		[ "$status" -eq 2 ] || { echo "$t exit $status"; return 1; }
		[ "${lines[-1]}" = "Try '$t --help' for more information." ] || { echo "$t: ${lines[*]}"; return 1; }
	done
}

@test "a write error on --help output is reported" {
	for t in $(tools); do
		run bash -c "$t --help >/dev/full"
		[ "$status" -eq 1 ] || { echo "$t exit $status"; return 1; }
	done
}
