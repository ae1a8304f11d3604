#!/usr/bin/env bats
# pn-import: NeuSight and PreNeT CSV to layer TSV, options, bad input.
# The neusight-*.csv fixtures are rows of NeuSight's archive (MIT licence,
# see samples/neusight/LICENSE), one with a made-up quoted kernel name; the
# prenet-*.csv ones are written by hand in the layout of PreNeT's scripts.
load test_helper

I="$FIX/import"

setup() {
	export PN_GPUSPECS="$I/gpus.tsv"
	T="$BATS_TEST_TMPDIR"
}

# NeuSight linear header and one row with the given Latency, Device and dims
ns_row() {
	printf 'OPName,Latency,Device,Kernel Name,B,M,N,K\n'
	printf 'linear,%s,%s,"k, ""x""",%s\n' "$1" "$2" "${3:-1,8,16,32}"
}

# ---- formats ---------------------------------------------------------------

@test "pn-import converts NeuSight linear rows to dense layers" {
	run pn-import "$I/neusight-linear.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/neusight-linear.expected"
}

@test "pn-import converts NeuSight bmm rows to bmm layers" {
	run pn-import "$I/neusight-bmm.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/neusight-bmm.expected"
}

@test "pn-import converts NeuSight conv rows to conv2d layers" {
	run pn-import "$I/neusight-conv.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/neusight-conv.expected"
}

@test "pn-import puts layernorm, softmax and elementwise rows under one header" {
	run pn-import "$I/neusight-vec.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/neusight-vec.expected"
}

@test "pn-import converts PreNeT dense rows and takes the device from the GPU column" {
	run pn-import "$I/prenet-dense.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/prenet-dense.expected"
}

@test "pn-import converts PreNeT convolutions, padding same as (kernel-1)/2" {
	run pn-import --device T4 "$I/prenet-conv.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/prenet-conv.expected"
}

@test "pn-import tells PreNeT rnn, lstm and gru rows apart by rnn_type" {
	run pn-import --device T4 "$I/prenet-rnn.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/prenet-rnn.expected"
}

@test "pn-import converts PreNeT attention rows" {
	run pn-import --device T4 "$I/prenet-attention.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/prenet-attention.expected"
}

@test "pn-import converts PreNeT embedding rows" {
	run pn-import --device T4 "$I/prenet-embedding.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/prenet-embedding.expected"
}

@test "pn-import takes PreNeT seq_len and embed_dim with an optimizer for layernorm" {
	run pn-import --device T4 "$I/prenet-layernorm.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/prenet-layernorm.expected"
}

@test "pn-import takes PreNeT seq_len and embed_dim without an optimizer for posenc" {
	run pn-import --device T4 "$I/prenet-posenc.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/prenet-posenc.expected"
}

@test "pn-import says when a header is neither NeuSight, PreNeT nor Vidur" {
	printf 'a,b\n1,2\n' >"$T/x.csv"
	run pn-import "$T/x.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/x.csv:1: unknown CSV layout: neither NeuSight (OPName,Latency,Device,...), PreNeT (batchsize,...,timeUsed_median,...) nor Vidur (time_stats.<op>.<stat>,...,num_tokens,num_tensor_parallel_workers); see --format" ]
}

# ---- input -----------------------------------------------------------------

@test "pn-import reads gzip input" {
	gzip -c "$I/neusight-linear.csv" >"$T/l.csv.gz"
	run pn-import "$T/l.csv.gz"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/neusight-linear.expected"
}

@test "pn-import reads standard input without FILE or with -" {
	pn-import <"$I/neusight-bmm.csv" >"$T/a"
	pn-import - <"$I/neusight-bmm.csv" >"$T/b"
	diff "$T/a" "$I/neusight-bmm.expected"
	diff "$T/b" "$I/neusight-bmm.expected"
}

@test "pn-import accepts CRLF line ends" {
	sed 's/$/\r/' "$I/neusight-linear.csv" >"$T/crlf.csv"
	run pn-import "$T/crlf.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/neusight-linear.expected"
}

@test "pn-import reads quoted fields with commas, doubled quotes and 30 kB of text" {
	long=$(head -c 30000 /dev/zero | tr '\0' 'k')
	{
		printf 'OPName,Latency,Device,Kernel Name,Kernels,B,H\n'
		printf 'relu,0.5,Tesla T4,"%s, ""a"", b",",x,",2,3\n' "$long"
		printf 'tanh,0.25,"Tesla T4","",%s,4,5\n' "$long"
	} >"$T/q.csv"
	run pn-import "$T/q.csv"
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "elementwise	relu	2	1	3	fp32	fwd	none	T4	0.5	neusight" ]
	[ "${lines[2]}" = "elementwise	tanh	4	1	5	fp32	fwd	none	T4	0.25	neusight" ]
	[ "${#lines[@]}" -eq 3 ]
}

@test "pn-import concatenates several files under one header" {
	run pn-import "$I/neusight-linear.csv" "$I/neusight-linear.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") <(cat "$I/neusight-linear.expected"; tail -n +2 "$I/neusight-linear.expected")
}

@test "pn-import refuses rows whose layer needs other columns than the first row's" {
	run pn-import "$I/neusight-linear.csv" "$I/neusight-bmm.csv"
	[ "$status" -eq 1 ]
	[ "${lines[-1]}" = "pn-import: $I/neusight-bmm.csv:2: layer 'bmm' needs other columns than layer 'dense' of the first row (import each layer type separately)" ]
}

# ---- bad data --------------------------------------------------------------

@test "pn-import names an unknown device and the closest known ones" {
	ns_row 0.5 "Tesla T5" >"$T/d.csv"
	run bash -c 'pn-import "$1" 2>&1 >/dev/null' _ "$T/d.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/d.csv:2: unknown device 'Tesla T5' in $I/gpus.tsv (closest: T4, V100-PCIE-32GB, A100-PCIE-40GB); pass --gpuspecs FILE with a table that has it (pn-time --cpu-spec -o FILE writes one for a CPU)" ]
}

@test "pn-import reports a column that the row's operator needs" {
	printf 'OPName,Latency,Device,B\nln,0.5,Tesla T4,3\n' >"$T/m.csv"
	run pn-import "$T/m.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/m.csv:2: missing column 'H' (needed by OPName 'ln')" ]
}

@test "pn-import reports a missing PreNeT column" {
	cut -d, -f1-2,4- "$I/prenet-attention.csv" >"$T/a.csv"
	run pn-import --device T4 "$T/a.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/a.csv:1: missing column 'seq_len'" ]
}

@test "pn-import rejects a latency that is not a number" {
	ns_row fast "Tesla T4" >"$T/l.csv"
	run pn-import "$T/l.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/l.csv:2: column 'Latency': 'fast' is not a number" ]
}

@test "pn-import rejects an empty latency" {
	ns_row "" "Tesla T4" >"$T/l.csv"
	run pn-import "$T/l.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/l.csv:2: column 'Latency': no value" ]
}

@test "pn-import rejects an NA latency" {
	ns_row NA "Tesla T4" >"$T/l.csv"
	run pn-import "$T/l.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/l.csv:2: column 'Latency': 'NA' is not a number" ]
}

@test "pn-import rejects a latency that is not positive" {
	ns_row -0.5 "Tesla T4" >"$T/l.csv"
	run pn-import "$T/l.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/l.csv:2: column 'Latency': '-0.5' is not positive" ]
}

@test "pn-import rejects a dimension that is not a whole number" {
	ns_row 0.5 "Tesla T4" "1,8.5,16,32" >"$T/l.csv"
	run pn-import "$T/l.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/l.csv:2: column 'M': '8.5' is not a whole number" ]
}

@test "pn-import rejects an impossible layer" {
	printf '%s\n' 'OPName,Latency,Device,B,Input_Channel,Output_Channel,Kernel_Szie,Input_Size,Stride,Padding' \
		'conv,1.5,Tesla T4,1,3,8,7,3,1,1' >"$T/c.csv"
	run pn-import "$T/c.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/c.csv:2: impossible conv2d: kernel 7 is larger than the padded image 5" ]
}

@test "pn-import rejects an unknown OPName" {
	printf 'OPName,Latency,Device,B,H\nsilu,0.5,Tesla T4,1,2\n' >"$T/o.csv"
	run pn-import "$T/o.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/o.csv:2: column 'OPName': unknown OPName 'silu' (one of: linear, bmm, conv, ln, softmax, add, addu, mul, mulu, div, divu, pow, powu, relu, gelu, tanh)" ]
}

@test "pn-import rejects an unknown PreNeT rnn_type" {
	sed '3s/GRU/LSTMX/' "$I/prenet-rnn.csv" >"$T/r.csv"
	run pn-import --device T4 "$T/r.csv"
	[ "$status" -eq 1 ]
	[ "${lines[-1]}" = "pn-import: $T/r.csv:3: column 'rnn_type': unknown value 'LSTMX' (one of: RNN, LSTM, GRU)" ]
}

@test "pn-import rejects a row with the wrong number of fields" {
	{ ns_row 0.5 "Tesla T4"; echo 'linear,0.5,Tesla T4,k,1,2,3'; } >"$T/f.csv"
	run pn-import "$T/f.csv"
	[ "$status" -eq 1 ]
	[ "${lines[-1]}" = "pn-import: $T/f.csv:3: expected 8 fields, found 7" ]
}

@test "pn-import rejects an unterminated quoted field" {
	{ ns_row 0.5 "Tesla T4"; printf 'linear,0.5,Tesla T4,"k,1,2,3,4\n'; } >"$T/u.csv"
	run pn-import "$T/u.csv"
	[ "$status" -eq 1 ]
	[ "${lines[-1]}" = "pn-import: $T/u.csv:3: unterminated quoted field" ]
}

@test "pn-import rejects empty input" {
	run pn-import </dev/null
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: -: empty input (no header)" ]
}

@test "pn-import rejects input with a header and no data rows" {
	head -1 "$I/neusight-linear.csv" >"$T/h.csv"
	run pn-import "$T/h.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/h.csv: no data rows" ]
}

@test "pn-import reports truncated gzip input" {
	gzip -c "$I/neusight-conv.csv" | head -c 300 >"$T/t.csv.gz"
	run bash -c 'pn-import "$1" 2>&1 >/dev/null' _ "$T/t.csv.gz"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $T/t.csv.gz: truncated gzip input" ]
}

# ---- output ----------------------------------------------------------------

@test "pn-import reports a write error" {
	run bash -c 'pn-import "$1" >/dev/full' _ "$I/neusight-linear.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: write error: No space left on device" ]
}

@test "pn-import -o writes the output to a file" {
	run pn-import -o "$T/out.tsv" "$I/neusight-bmm.csv"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	diff "$T/out.tsv" "$I/neusight-bmm.expected"
}

@test "pn-import -o leaves no file behind when the input is bad" {
	run pn-import --output "$T/out.tsv" "$I/neusight-linear.csv" "$I/neusight-bmm.csv"
	[ "$status" -eq 1 ]
	[ ! -e "$T/out.tsv" ]
	[ -z "$(ls "$T")" ]
}

# ---- options ---------------------------------------------------------------

@test "pn-import --format neusight reads a NeuSight file whose header is reordered" {
	printf 'Device,OPName,Latency,B,M,N,K\nTesla T4,bmm,0.25,2,3,4,5\n' >"$T/r.csv"
	run pn-import -f neusight "$T/r.csv"
	[ "$status" -eq 0 ]
	[ "${lines[1]}" = "bmm	2	3	4	5	fp32	fwd	none	T4	0.25	neusight" ]
}

@test "pn-import --format prenet makes a NeuSight file an error" {
	run pn-import --format prenet "$I/neusight-bmm.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $I/neusight-bmm.csv:1: cannot tell the layer type from the columns (use --layer)" ]
}

@test "pn-import rejects an unknown --format with exit 2" {
	run pn-import --format csv "$I/neusight-bmm.csv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-import: --format: unknown value 'csv' (one of: neusight, prenet, vidur)" ]
	[ "${lines[1]}" = "Try 'pn-import --help' for more information." ]
}

@test "pn-import --layer sets the layer type of PreNeT rows" {
	run pn-import --device T4 --layer lstm "$I/prenet-rnn.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") <(sed '2,$s/^[a-z]*/lstm/' "$I/prenet-rnn.expected")
}

@test "pn-import --layer fails on a NeuSight row of another type" {
	run pn-import --layer elementwise "$I/neusight-vec.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: $I/neusight-vec.csv:2: column 'OPName': OPName 'ln' is layer 'layernorm', not 'elementwise' as --layer says" ]
}

@test "pn-import rejects an unknown --layer with exit 2" {
	run pn-import --layer mlp "$I/neusight-bmm.csv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-import: unknown layer type 'mlp'" ]
}

@test "pn-import --device overrides the device column" {
	run pn-import --device "Tesla V100-PCIE-32GB" "$I/neusight-linear.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") <(sed 's/\t\(T4\|A100-PCIE-40GB\)\t/\tV100-PCIE-32GB\t/' "$I/neusight-linear.expected")
	run pn-import --device a100 "$I/prenet-dense.csv"
	[ "$status" -eq 0 ]
	[ "$(cut -f10 <<<"$output" | sort -u)" = "$(printf 'A100-PCIE-40GB\ndevice')" ]
}

@test "pn-import needs --device for a PreNeT file without a GPU column" {
	run pn-import "$I/prenet-conv.csv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-import: $I/prenet-conv.csv: no GPU column; give --device NAME" ]
	[ "${lines[1]}" = "Try 'pn-import --help' for more information." ]
}

@test "pn-import rejects an unknown --device" {
	run pn-import --device H900 "$I/prenet-conv.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: unknown device 'H900' in $I/gpus.tsv (closest: V100-PCIE-32GB, A100-PCIE-40GB, T4); pass --gpuspecs FILE with a table that has it (pn-time --cpu-spec -o FILE writes one for a CPU)" ]
}

@test "pn-import --source sets the source column" {
	run pn-import --source "neusight test" "$I/neusight-bmm.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") <(sed '2,$s/neusight$/neusight test/' "$I/neusight-bmm.expected")
}

@test "pn-import rejects a --source with a tab" {
	run pn-import --source "$(printf 'a\tb')" "$I/neusight-bmm.csv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-import: --source needs a non-empty text without tabs or newlines" ]
}

@test "pn-import --gpuspecs picks the GPU table" {
	PN_GPUSPECS=/nonexistent run pn-import --gpuspecs "$I/gpus.tsv" "$I/neusight-bmm.csv"
	[ "$status" -eq 0 ]
	diff <(printf '%s\n' "$output") "$I/neusight-bmm.expected"
	PN_GPUSPECS=/nonexistent run pn-import "$I/neusight-bmm.csv"
	[ "$status" -eq 1 ]
	[ "$output" = "pn-import: /nonexistent: No such file or directory" ]
}

@test "pn-import --skip-bad skips rows without a positive time and counts them" {
	{ ns_row 0.5 "Tesla T4"; echo 'linear,,Tesla T4,k,1,2,3,4'; echo 'linear,0,Tesla T4,k,1,2,3,4'; } >"$T/s.csv"
	pn-import --skip-bad "$T/s.csv" >"$T/out" 2>"$T/err"
	[ "$(cat "$T/err")" = "pn-import: warning: skipped 2 rows without a positive time" ]
	[ "$(wc -l <"$T/out")" -eq 2 ]
	[ "$(tail -1 "$T/out")" = "dense	8	16	32	1	none	fp32	fwd	none	T4	0.5	neusight" ]
}

@test "pn-import --skip-bad still fails when no row is left" {
	ns_row NA "Tesla T4" >"$T/s.csv"
	run pn-import --skip-bad "$T/s.csv"
	[ "$status" -eq 1 ]
	[ "${lines[0]}" = "pn-import: warning: skipped 1 row without a positive time" ]
	[ "${lines[1]}" = "pn-import: no data rows left after --skip-bad" ]
}

@test "pn-import --help prints usage on standard output and exits 0" {
	pn-import --help >"$T/out" 2>"$T/err"
	[ "$(head -1 "$T/out")" = "Usage: pn-import [OPTION]... [FILE]..." ]
	grep -q -- '--skip-bad' "$T/out"
	[ ! -s "$T/err" ]
}

@test "pn-import --version prints the version" {
	run pn-import --version
	[ "$status" -eq 0 ]
	[ "$output" = "pn-import 0.1.0" ]
}

@test "pn-import rejects an unknown option with exit 2" {
	run pn-import --bogus "$I/neusight-bmm.csv"
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-import: unrecognized option '--bogus'" ]
	[ "${lines[1]}" = "Try 'pn-import --help' for more information." ]
	run pn-import -x
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-import: invalid option -- 'x'" ]
	run pn-import -o
	[ "$status" -eq 2 ]
	[ "${lines[0]}" = "pn-import: option '-o' requires an argument" ]
}
