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

@test "make rebuilds every object when a header it includes changes" {
	# each C file of src/lib, src/cpu, src/time and the programs, each
	# header it includes by name that lives in src: make -n -W HEADER
	# must compile the file's object (a program's object is an
	# intermediate that make deletes: asked of the program)
	cd "$PN_ROOT"
	declare -A goals
	for c in src/lib/*.c src/cpu/*.c src/time/*.c src/pn-*.c; do
		o=build/${c#src/}
		o=${o%.c}.o
		g=$o
		case $c in src/pn-*) g=bin/$(basename "$c" .c) ;; esac
		for h in $(sed -n 's/^#include "\(.*\)"$/\1/p' "$c"); do
			for d in "$(dirname "$c")" src/lib; do
				[ -f "$d/$h" ] || continue
				f=$(realpath --relative-to=. "$d/$h")
				goals[$f]="${goals[$f]:-} $g:$o"
				break
			done
		done
	done
	all=$(printf '%s\n' "${goals[@]}" | tr ' ' '\n' | sed -n 's/:.*//p' | sort -u)
	# shellcheck disable=SC2086
	stale=$(make -n $all 2>&1 | sed -n 's/.* -c -o \([^ ]*\) .*/\1/p')
	[ -z "$stale" ] || { echo "not up to date (make first):" $stale; false; }
	miss=
	for f in "${!goals[@]}"; do
		# shellcheck disable=SC2086
		out=$(make -n -W "$f" $(printf '%s\n' ${goals[$f]} | sed 's/:.*//') 2>/dev/null)
		for p in ${goals[$f]}; do
			grep -q -- "-c -o ${p#*:} " <<<"$out" || miss="$miss ${p#*:}<-$f"
		done
	done
	[ -z "$miss" ] || { echo "not rebuilt:$miss"; false; }
}
