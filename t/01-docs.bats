#!/usr/bin/env bats
# Every tool's manual: present, rendered without warnings, SYNOPSIS equal to
# the --help usage line, every example runnable.
load test_helper

render() { LC_ALL=C MANWIDTH=200 man -E UTF-8 -l "$PN_ROOT/man/$1.1" 2>/dev/null; }

@test "every tool has a man page" {
	for t in $(tools); do
		[ -f "$PN_ROOT/man/$t.1" ] || { echo "no man/$t.1"; return 1; }
	done
}

@test "every man page renders without warnings" {
	for t in $(tools); do
		w=$(LC_ALL=C MANWIDTH=80 man --warnings -E UTF-8 -l "$PN_ROOT/man/$t.1" 2>&1 >/dev/null)
		[ -z "$w" ] || { echo "$t: $w"; return 1; }
	done
}

@test "every man page SYNOPSIS equals the --help usage line" {
	for t in $(tools); do
		help=$("$t" --help | head -1 | sed 's/^Usage: //')
		syn=$(render "$t" | awk '/^SYNOPSIS/{f=1;next} f&&/^[A-Z]/{exit} f&&NF{sub(/^ +/,"");print;exit}')
		[ "$help" = "$syn" ] || { echo "$t: help '$help' vs man '$syn'"; return 1; }
	done
}

@test "every man page documents the exit status" {
	for t in $(tools); do
		render "$t" | grep -q '^EXIT STATUS' || { echo "$t"; return 1; }
	done
}

@test "every example in the man pages runs" {
	cd "$PN_ROOT"
	n=0
	for t in $(tools); do
		# pn-onnx built without protobuf-c exits 3 on every model (its
		# tests skip by name, t/75-onnx.bats): its examples cannot run
		if [ "$t" = pn-onnx ]; then
			rc=0
			pn-onnx --params t/fixtures/onnx/cnn.onnx >/dev/null 2>&1 || rc=$?
			if [ "$rc" -eq 3 ]; then
				echo "# pn-onnx's examples not run: built without ONNX support" >&3
				continue
			fi
		fi
		# command lines of the EXAMPLES section, roff escapes undone,
		# their files in /tmp written to this test's directory instead
		while IFS= read -r cmd; do
			cmd=${cmd//\/tmp\//$BATS_TEST_TMPDIR/}
			[ -n "$cmd" ] || continue
			n=$((n + 1))
			bash -o pipefail -c "$cmd" >/dev/null 2>"$BATS_TEST_TMPDIR/err" ||
				{ echo "$t example failed: $cmd"; cat "$BATS_TEST_TMPDIR/err"; return 1; }
		done < <(awk '/^\.SH EXAMPLES/{f=1;next} /^\.SH/{f=0} f&&/^pn-/' "man/$t.1" |
			sed -e 's/\\-/-/g' -e "s/\\\\(aq/'/g" -e 's/\\e/\\/g')
	done
	[ "$n" -gt 0 ]
}
