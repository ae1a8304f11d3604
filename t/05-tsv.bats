#!/usr/bin/env bats
# The shared TSV reader and writer (src/lib/tsv.c), exercised through
# pn-featurize: every tool reads and writes through the same code.
load test_helper

G="--gpuspecs $FIX/featurize/gpus.tsv"
L="$FIX/featurize/layers.tsv"
T() { printf '%s' "$BATS_TEST_TMPDIR/$1"; }

@test "reader takes gzip input exactly like plain input" {
	gzip -c "$L" >"$(T in.gz)"
	pn-featurize $G "$L" >"$(T plain)"
	pn-featurize $G "$(T in.gz)" >"$(T gz)"
	cmp "$(T plain)" "$(T gz)"
}

@test "reader takes gzip on standard input" {
	pn-featurize $G "$L" >"$(T plain)"
	gzip -c "$L" | pn-featurize $G >"$(T gz)"
	cmp "$(T plain)" "$(T gz)"
}

@test "reader reads concatenated gzip members as one stream" {
	head -8 "$L" | gzip -c >"$(T cat.gz)"
	tail -n +9 "$L" | gzip -c >>"$(T cat.gz)"
	pn-featurize $G "$L" >"$(T plain)"
	pn-featurize $G "$(T cat.gz)" >"$(T gz)"
	cmp "$(T plain)" "$(T gz)"
}

@test "reader accepts CRLF line ends and a missing final newline" {
	sed 's/$/\r/' "$L" | head -c -2 >"$(T crlf)"
	pn-featurize $G "$L" >"$(T plain)"
	pn-featurize $G "$(T crlf)" >"$(T out)"
	cmp "$(T plain)" "$(T out)"
}

@test "reader reports a truncated gzip file" {
	gzip -c "$L" | head -c 200 >"$(T trunc.gz)"
	run bash -c "pn-featurize $G '$(T trunc.gz)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $(T trunc.gz): truncated gzip input" ]
}

@test "reader reports corrupt gzip data" {
	gzip -c "$L" >"$(T bad.gz)"
	printf 'XXXXXXXXXXXXXXXX' | dd of="$(T bad.gz)" bs=1 seek=30 conv=notrunc 2>/dev/null
	run bash -c "pn-featurize $G '$(T bad.gz)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[[ "$output" == "pn-featurize: $(T bad.gz): corrupt gzip input: "* ]]
}

@test "reader names the line of a row with too few fields" {
	{ head -3 "$L"; sed -n 4p "$L" | cut -f1-10; } >"$(T short)"
	run bash -c "pn-featurize $G '$(T short)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $(T short):4: expected 30 fields, found 10" ]
}

@test "reader names the line of a row with too many fields" {
	{ head -2 "$L"; sed -n 3p "$L" | sed 's/$/\textra/'; } >"$(T long)"
	run bash -c "pn-featurize $G '$(T long)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $(T long):3: expected 30 fields, found 31" ]
}

@test "reader refuses a NUL byte in a field, naming its line, row by row and all at once" {
	# "dense<NUL>zzz" would read as dense, the rest unseen
	{ head -2 "$L"; sed -n 2p "$L" | sed 's/^dense/dense\x00zzz/'; } >"$(T nul)"
	[ "$(tr -cd '\000' <"$(T nul)" | wc -c)" -eq 1 ]
	run bash -c "pn-featurize $G '$(T nul)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $(T nul):3: a NUL byte in the line (binary data, not TSV)" ]
	run bash -c "pn-fit -f lr '$(T nul)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-fit: $(T nul):3: a NUL byte in the line (binary data, not TSV)" ]
	printf 'la\x00yer\tbatch\n' >"$(T head)"
	run bash -c "pn-featurize $G '$(T head)' 2>&1 >/dev/null"
	[ "$output" = "pn-featurize: $(T head):1: a NUL byte in the line (binary data, not TSV)" ]
}

@test "reader rejects a non-numeric field and quotes it" {
	printf 'layer\tbatch\tm\tn\tk\tdevice\nbmm\t1\tten\t3\t4\tTESTGPU\n' >"$(T in)"
	run bash -c "pn-featurize $G '$(T in)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $(T in):2: column 'm': 'ten' is not a number" ]
}

@test "reader rejects numbers with trailing garbage, hex, inf and nan" {
	for v in 3x 0x10 inf nan '' ' 3' 1e; do
		printf 'layer\tbatch\tm\tn\tk\tdevice\nbmm\t1\t%s\t3\t4\tTESTGPU\n' "$v" >"$(T in)"
		run pn-featurize $G "$(T in)"
		[ "$status" -eq 1 ]
	done
}

@test "reader accepts signs, exponents and fractions that are whole" {
	printf 'layer\tbatch\tm\tn\tk\tdevice\nbmm\t+1\t2e0\t3.0\t0.4e1\tTESTGPU\n' >"$(T in)"
	run pn-featurize $G "$(T in)"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | sed -n 2p | cut -f7)" = 48 ]
}

@test "reader says a whole number beyond 2^53 is too large and names the limit" {
	printf 'layer\tbatch\tm\tn\tk\tdevice\nbmm\t1e300\t2\t3\t4\tTESTGPU\n' >"$(T in)"
	run bash -c "pn-featurize $G '$(T in)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $(T in):2: column 'batch': '1e300' is too large (at most 9007199254740991)" ]
}

@test "reader says a whole number beyond a double is too large, not a non-number" {
	printf 'layer\tbatch\tm\tn\tk\tdevice\nbmm\t1\t1e400\t3\t4\tTESTGPU\n' >"$(T in)"
	run bash -c "pn-featurize $G '$(T in)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $(T in):2: column 'm': '1e400' is too large (at most 9007199254740991)" ]
}

@test "reader says a whole number below -2^53 is too small and names the limit" {
	printf 'layer\tbatch\tm\tn\tk\tdevice\nbmm\t1\t2\t-1e16\t4\tTESTGPU\n' >"$(T in)"
	run bash -c "pn-featurize $G '$(T in)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $(T in):2: column 'n': '-1e16' is too small (at least -9007199254740991)" ]
}

@test "reader reads a whole number with an exponent as options do" {
	printf 'layer\tbatch\tm\tn\tk\tdevice\nbmm\t1000\t2\t3\t4\tTESTGPU\n' >"$(T a)"
	printf 'layer\tbatch\tm\tn\tk\tdevice\nbmm\t1e3\t2\t3\t4\tTESTGPU\n' >"$(T b)"
	pn-featurize $G "$(T a)" | tail -n +2 | cut -f 3- >"$(T a.out)"
	pn-featurize $G "$(T b)" | tail -n +2 | cut -f 3- >"$(T b.out)"
	cmp "$(T a.out)" "$(T b.out)"
}

@test "reader rejects a header that repeats a column" {
	printf 'layer\tbatch\tbatch\nbmm\t1\t1\n' >"$(T in)"
	run bash -c "pn-featurize $G '$(T in)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $(T in):1: duplicate column 'batch'" ]
}

@test "reader rejects empty input" {
	: >"$(T empty)"
	run bash -c "pn-featurize $G '$(T empty)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $(T empty): empty input (no header)" ]
}

@test "reader names standard input as -" {
	run bash -c "pn-featurize $G </dev/null 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: -: empty input (no header)" ]
}

@test "a header without rows is refused as no data rows" {
	head -1 "$L" >"$(T header)"
	run bash -c "pn-featurize $G '$(T header)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $(T header): no data rows" ]
}

@test "a missing input file is named with the system's reason" {
	run bash -c "pn-featurize $G '$(T nosuch)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: $(T nosuch): No such file or directory" ]
}

@test "a full disk on standard output is a write error" {
	run bash -c "pn-featurize $G '$L' 2>&1 >/dev/full"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: write error: No space left on device" ]
}

@test "a full disk on an output file is a write error naming it" {
	run bash -c "pn-featurize $G -o /dev/full '$L' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: write error: /dev/full: No space left on device" ]
}

@test "an output file appears only when the run succeeds" {
	{ cat "$L"; printf 'bmm\tNA\t1\n'; } >"$(T bad)"
	run pn-featurize $G -o "$(T out.tsv)" "$(T bad)"
	[ "$status" -eq 1 ]
	[ ! -e "$(T out.tsv)" ]
	[ -z "$(ls "$BATS_TEST_TMPDIR" | grep out.tsv)" ]
	run pn-featurize $G -o "$(T out.tsv)" "$L"
	[ "$status" -eq 0 ]
	[ -s "$(T out.tsv)" ]
}

@test "a failed run keeps the previous output file intact" {
	echo previous >"$(T out.tsv)"
	run pn-featurize $G -o "$(T out.tsv)" "$(T nosuch)"
	[ "$status" -eq 1 ]
	[ "$(cat "$(T out.tsv)")" = previous ]
}

@test "-o writes into a device file in place and leaves it a device" {
	[ "$(id -u)" -eq 0 ] || skip "mknod needs root"
	mknod "$(T null)" c 1 3
	run pn-featurize $G -o "$(T null)" "$L"
	[ "$status" -eq 0 ]
	[ -c "$(T null)" ]
	[ "$(ls "$BATS_TEST_TMPDIR")" = null ]
}

@test "-o on a full device reports the write error and keeps the device" {
	[ "$(id -u)" -eq 0 ] || skip "mknod needs root"
	mknod "$(T full)" c 1 7
	run bash -c "pn-featurize $G -o '$(T full)' '$L' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-featurize: write error: $(T full): No space left on device" ]
	[ -c "$(T full)" ]
}

@test "-o writes into a FIFO in place" {
	mkfifo "$(T fifo)"
	cat "$(T fifo)" >"$(T got)" &
	pn-featurize $G -o "$(T fifo)" "$L"
	wait $!
	[ -p "$(T fifo)" ]
	pn-featurize $G "$L" | cmp - "$(T got)"
}

@test "-o through a symbolic link writes its target and keeps the link" {
	echo previous >"$(T target.tsv)"
	ln -s target.tsv "$(T link)"
	run pn-featurize $G -o "$(T link)" "$L"
	[ "$status" -eq 0 ]
	[ -L "$(T link)" ]
	pn-featurize $G "$L" | cmp - "$(T target.tsv)"
	[ "$(ls "$BATS_TEST_TMPDIR" | tr '\n' ' ')" = "link target.tsv " ]
}

@test "-o through a dangling symbolic link creates its target" {
	mkdir "$(T d)"
	ln -s d/new.tsv "$(T link)"
	run pn-featurize $G -o "$(T link)" "$L"
	[ "$status" -eq 0 ]
	[ -L "$(T link)" ]
	pn-featurize $G "$L" | cmp - "$(T d/new.tsv)"
}

@test "-o makes a new file of mode 0666 less the umask" {
	(umask 027 && pn-featurize $G -o "$(T out.tsv)" "$L")
	[ "$(stat -c %a "$(T out.tsv)")" = 640 ]
	(umask 002 && pn-featurize $G -o "$(T out2.tsv)" "$L")
	[ "$(stat -c %a "$(T out2.tsv)")" = 664 ]
}

# ---- a UTF-8 byte order mark, read once by the shared reader (input.c) ----

# bom FILE: FILE with a byte order mark before its first byte
bom() { printf '\357\273\277'; cat "$1"; }

@test "pn-featurize reads input that starts with a byte order mark" {
	bom "$L" >"$(T in)"
	run pn-featurize $G "$(T in)"
	[ "$status" -eq 0 ]
	pn-featurize $G "$L" | diff - <(printf '%s\n' "$output")
}

@test "pn-featurize reads gzip input that starts with a byte order mark" {
	bom "$L" | gzip -c >"$(T in.gz)"
	pn-featurize $G "$(T in.gz)" >"$(T out)"
	pn-featurize $G "$L" | cmp - "$(T out)"
}

@test "pn-specs reads a spec table that starts with a byte order mark" {
	bom "$FIX/featurize/gpus.tsv" >"$(T g)"
	run pn-specs --gpuspecs "$(T g)" -o "$(T out)"
	[ "$status" -eq 0 ]
	cmp "$(T out)" "$FIX/featurize/gpus.tsv"
}

@test "pn-fit and pn-eval read input that starts with a byte order mark" {
	S="--gpuspecs $FIX/sum/gpus.tsv"
	pn-featurize $S "$FIX/sum/bmm-train.tsv" >"$(T f)"
	bom "$(T f)" >"$(T fb)"
	pn-fit -f lr -F flops -o "$(T plain.model)" "$(T f)"
	run pn-fit -f lr -F flops -o "$(T bom.model)" "$(T fb)"
	[ "$status" -eq 0 ]
	cmp "$(T plain.model)" "$(T bom.model)"
	pn-eval -m "$(T plain.model)" "$(T f)" >"$(T plain.eval)" 2>&1
	run pn-eval -m "$(T plain.model)" "$(T fb)"
	[ "$status" -eq 0 ]
	diff "$(T plain.eval)" <(printf '%s\n' "$output")
}

# A table read whole (pn-fit's) is read from a regular file into a buffer
# of the file's size, from a pipe or gzip into one that grows: the rows
# are the same, past the first megabyte too.
@test "pn-fit reads a table of megabytes alike from a file, a pipe, gzip and after a byte order mark" {
	awk 'BEGIN { srand(7); print "layer\tx1\tx2\ttime_ms"
		for (i = 0; i < 60000; i++) { a = rand(); b = rand()
			printf "dense\t%.9f\t%.9f\t%.9f\n", a, b, 1 + a + 2 * b + rand() / 10 } }' >"$(T big)"
	[ "$(stat -c %s "$(T big)")" -gt 2000000 ]
	A="-f lr -F x1,x2 --no-by-layer -s 1"
	pn-fit $A -o "$(T file.model)" "$(T big)"
	cat "$(T big)" | pn-fit $A -o "$(T pipe.model)" -
	gzip -c "$(T big)" >"$(T big.gz)"
	pn-fit $A -o "$(T gz.model)" "$(T big.gz)"
	bom "$(T big)" >"$(T bom)"
	pn-fit $A -o "$(T bom.model)" "$(T bom)"
	cmp "$(T file.model)" "$(T pipe.model)"
	cmp "$(T file.model)" "$(T gz.model)"
	cmp "$(T file.model)" "$(T bom.model)"
	grep -qx 'info rows 60000' "$(T file.model)"
}

@test "pn-sum reads a network that starts with a byte order mark" {
	S="--gpuspecs $FIX/sum/gpus.tsv"
	bom "$FIX/sum/net.tsv" >"$(T net)"
	run pn-sum --fallback roofline $S -d UNIT "$(T net)"
	[ "$status" -eq 0 ]
	pn-sum --fallback roofline $S -d UNIT "$FIX/sum/net.tsv" | diff - <(printf '%s\n' "$output")
}

@test "pn-time reads layers that start with a byte order mark" {
	printf '\357\273\277layer\tbatch\tm\tn\tk\nbmm\t1\t2\t2\t2\n' >"$(T in)"
	run pn-time -q -r 1 -o "$(T out)" "$(T in)"
	[ "$status" -eq 0 ]
	[ "$(head -c 6 "$(T out)")" = "$(printf 'layer\t')" ]
	[ "$(awk -F'\t' 'NR==1{for(i=1;i<=NF;i++)if($i=="status")k=i} NR==2{print $k}' "$(T out)")" = ok ]
}

@test "pn-import reads a CSV that starts with a byte order mark" {
	bom "$FIX/import/neusight-linear.csv" >"$(T in.csv)"
	run pn-import --gpuspecs "$FIX/import/gpus.tsv" "$(T in.csv)"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$FIX/import/neusight-linear.expected"
}

@test "a byte order mark after the first byte is data, not dropped" {
	{ printf 'name\t\357\273\277'; tail -c +6 "$FIX/featurize/gpus.tsv"; } >"$(T g)"
	run bash -c "pn-specs --gpuspecs '$(T g)' 2>&1 >/dev/null"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-specs: $(T g):1: missing column 'aliases'" ]
}

@test "writer prints numbers in their shortest exact form" {
	printf 'layer\tbatch\tm\tn\tk\tdevice\nbmm\t3\t1\t1\t1\tTESTGPU\n' >"$(T in)"
	run pn-featurize $G "$(T in)"
	[ "$status" -eq 0 ]
	# co = 6 flops at 10 TFLOP/s = 6e-10 ms
	[ "$(printf '%s\n' "$output" | sed -n 2p | cut -f14)" = 6e-10 ]
}

@test "reader parses long decimals to the same double as strtod" {
	# 3000 numbers of 15 to 19 digits (beyond the 2^53 fast path), with
	# exponents, the first digit never 0 (a measured 0 has no APE); pn-eval's
	# mae of one row against 0 is the number itself,
	# printed in a form that reads back exactly; gawk reads with strtod
	awk 'BEGIN { srand(7); print "id\ttime_ms\tpred_ms"
		for (i = 0; i < 3000; i++) {
			d = 15 + int(rand() * 5); s = 1 + int(rand() * 9)
			for (j = 1; j < d; j++) s = s int(rand() * 10)
			s = substr(s, 1, 1 + int(rand() * d)) "." substr(s, 2 + int(rand() * d))
			printf "%d\t%se%d\t0\n", i, s, int(rand() * 40) - 20 } }' >"$(T in)"
	run pn-eval -b id "$(T in)"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" >"$(T out)"
	awk -F'\t' 'FNR == NR { if (FNR > 1) v[$1] = $2; next }
		FNR > 1 { n++; if ($4 + 0 != v[$1] + 0) { print $1 ": " v[$1] " read as " $4; bad = 1 } }
		END { exit bad || n != 3000 }' "$(T in)" "$(T out)"
}

@test "reader rounds a decimal halfway between two doubles to the even one" {
	printf 'time_ms\tpred_ms\n9007199254740993\t0\n' >"$(T in)"
	run pn-eval "$(T in)"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | sed -n 2p | cut -f3)" = 9007199254740992 ]
}
