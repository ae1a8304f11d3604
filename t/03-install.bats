#!/usr/bin/env bats
# make install puts tools, man pages and the GPU table where they work.
load test_helper

@test "make install installs every tool, man page and the GPU table" {
	run make -C "$PN_ROOT" -s install PREFIX="$BATS_TEST_TMPDIR/p"
	[ "$status" -eq 0 ]
	for s in "$PN_ROOT"/src/pn-*.c; do
		t=$(basename "$s" .c)
		[ -x "$BATS_TEST_TMPDIR/p/bin/$t" ]
		[ -f "$BATS_TEST_TMPDIR/p/share/man/man1/$t.1" ]
	done
	[ -f "$BATS_TEST_TMPDIR/p/share/pn/gpus.tsv" ]
}

@test "an installed tool finds the installed GPU table" {
	make -C "$PN_ROOT" -s install PREFIX="$BATS_TEST_TMPDIR/p" >/dev/null
	printf 'layer\tbatch\tm\tn\tk\tdevice\nbmm\t1\t2\t3\t4\tTesla T4\n' >"$BATS_TEST_TMPDIR/in"
	run "$BATS_TEST_TMPDIR/p/bin/pn-featurize" "$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | sed -n 2p | cut -f7)" = 48 ]
}
