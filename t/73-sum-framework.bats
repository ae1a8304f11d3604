#!/usr/bin/env bats
# pn-sum --framework: a framework's fixed costs per op added to every row
# (src/lib/framework.h, pn-sum(1) FRAMEWORK OVERHEAD).
load test_helper

F="$FIX/framework"
A="--fallback roofline -g $FIX/sum/gpus.tsv -d UNIT -b 4"
# profile.tsv (us): step 100; opt.adam 20 a tensor and 0.001 a weight
# element (sgd 2 and 0.002, with momentum 5 and 0.003); dense 10 + 30; relu
# 4 + 8; dropout 6 + 7; elementwise 1 + 2; lstm 50 + 100 a call and 20 +
# 40 a layer and time step.  net.tsv: fc dense (bias, relu, adam) train;
# drop dropout train; add fwd, repeat 2; rnn lstm (2 layers, 3 steps,
# adam) train.

setup() { T=$BATS_TEST_TMPDIR; }

# prof LINES...: a profile of the given lines after the header, in $T/p.tsv
prof() { printf 'cost\tus\n' >"$T/p.tsv"; printf '%s\n' "$@" >>"$T/p.tsv"; }

# refused MESSAGE: pn-sum with the profile $T/p.tsv exits 1 with MESSAGE
# on stderr and nothing on stdout
refused() {
	run_io pn-sum $A --framework "$T/p.tsv" "$F/net.tsv"
	[ "$status" -eq 1 ]
	[ ! -s "$T/out" ]
	[ "$(cat "$T/err")" = "$1" ]
}

@test "pn-sum --framework adds each row's fixed costs by its type, op, activation, layers, steps and tensors" {
	run_io pn-sum $A --framework "$F/profile.tsv" --per-layer "$F/net.tsv"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
	# fc 10 + 4 + 30 + 8 + 2 tensors x 20 + 2080 weights x 0.001; drop
	# 6 + 7; add 1; rnn 50 + 100 + 2 x 3 x (20 + 40) + 8 tensors x 20 +
	# 4352 weights x 0.001 (us)
	[ "$(column "$T/out" overhead_ms | tr '\n' ' ')" = "0.09408 0.013000000000000001 0.001 0.6743520000000001 " ]
	[ "$(head -1 "$T/out" | tr '\t' '\n' | tail -1)" = overhead_ms ]
}

@test "pn-sum --framework adds the rows' costs and the step's once to the iteration" {
	# without the lstm row, which a profile of lstm's per-step costs
	# also decomposes into its ops (t/77-sum-step.bats)
	head -n 4 "$F/net.tsv" >"$T/net.tsv"
	pn-sum $A "$T/net.tsv" >"$T/without"
	run_io pn-sum $A --framework "$F/profile.tsv" "$T/net.tsv"
	[ "$status" -eq 0 ]
	# the rows' 0.09408 + 0.013 + 2 x 0.001 and the step's 0.1
	[ "$(col "$T/out" overhead_ms 1)" = 0.20908 ]
	near "$(col "$T/out" iteration_ms 1)" "$(echo "$(col "$T/without" iteration_ms 1) + 0.20908" | bc -l)"
	# the step's cost in opt_ms, beside the fc row's Adam (decomposed)
	near "$(col "$T/out" opt_ms 1)" "$(echo "$(col "$T/without" opt_ms 1) + 0.14208" | bc -l)"
}

@test "pn-sum --framework charges SGD with --momentum its own cost per tensor" {
	run_io pn-sum $A --optimizer sgd --momentum --framework "$F/profile.tsv" --per-layer "$F/net.tsv"
	[ "$status" -eq 0 ]
	# fc 52 + 2 x 5 + 2080 x 0.003 us; rnn 510 + 8 x 5 + 4352 x 0.003 us
	[ "$(column "$T/out" overhead_ms | tr '\n' ' ')" = "0.06824 0.013000000000000001 0.001 0.563056 " ]
}

# summary.expected and layers.expected: pn-sum's output before --framework,
# regenerated once since, when the GPU roofline added a recurrent row's
# steps (pn_recurrence_ms: the lstm row 0.27 ms more)
@test "pn-sum without --framework writes what it wrote before" {
	run_io pn-sum $A "$F/net.tsv"
	[ "$status" -eq 0 ]
	cmp "$T/out" "$F/summary.expected"
	run_io pn-sum $A --per-layer "$F/net.tsv"
	[ "$status" -eq 0 ]
	cmp "$T/out" "$F/layers.expected"
}

# paged COST: the shipped test profile plus step.page COST, in $T/p.tsv;
# and $C, $A on UCPU: UNIT as a CPU (arch CPU-AVX2), whose steps fault
# their pages in (on a GPU none are)
paged() {
	cp "$F/profile.tsv" "$T/p.tsv"
	printf 'step.page\t%s\t\n' "$1" >>"$T/p.tsv"
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
		$1 == "UNIT" { $c["name"] = "UCPU"; $c["aliases"] = "NA"; $c["arch"] = "CPU-AVX2"; print }' \
		"$FIX/sum/gpus.tsv" >"$T/cpu.tsv"
	C="--fallback roofline -g $T/cpu.tsv -d UCPU -b 4"
}

# paged_step: the first row of the test network at 4096 us a page (0.001
# ms a byte), run with the paged profile ($T/out, status) and without it
# ($T/without); w, saved and grads: its weights', saved and gradient bytes
paged_step() {
	head -n 2 "$F/net.tsv" >"$T/net.tsv"
	paged 4096
	pn-sum $C --per-layer "$T/net.tsv" >"$T/rows"
	pn-sum $C --framework "$F/profile.tsv" "$T/net.tsv" >"$T/without"
	run_io pn-sum $C --framework "$T/p.tsv" "$T/net.tsv"
	w=$(col "$T/rows" weights_bytes 1)
	saved=$(col "$T/rows" saved_bytes 1)
	grads=$(col "$T/rows" grads_bytes 1)
}

@test "pn-sum --framework's step.page charges a step's saved activations and gradients to train_ms, Adam's two temporaries to opt_ms" {
	paged_step
	[ "$status" -eq 0 ]
	# nothing on stderr but the warning of those pages (the next test)
	! grep -v '^pn-sum: warning: fresh pages (step.page) are ' "$T/err"
	near "$(col "$T/out" train_ms 1)" "$(echo "$(col "$T/without" train_ms 1) + ($saved + $grads) / 1000" | bc -l)"
	near "$(col "$T/out" opt_ms 1)" "$(echo "$(col "$T/without" opt_ms 1) + 2 * $w / 1000" | bc -l)"
	near "$(col "$T/out" overhead_ms 1)" "$(echo "$(col "$T/without" overhead_ms 1) + ($saved + $grads + 2 * $w) / 1000" | bc -l)"
	near "$(col "$T/out" iteration_ms 1)" "$(echo "$(col "$T/without" iteration_ms 1) + ($saved + $grads + 2 * $w) / 1000" | bc -l)"
}

@test "pn-sum --framework's page_ms, before overhead_ms, is the step's fresh pages at step.page, 0 without it" {
	paged_step
	[ "$status" -eq 0 ]
	near "$(col "$T/out" page_ms 1)" "$(echo "($saved + $grads + 2 * $w) / 1000" | bc -l)"
	[ "$(col "$T/without" page_ms 1)" = 0 ]
	[ "$(head -1 "$T/out" | tr '\t' '\n' | tail -2 | tr '\n' ' ')" = "page_ms overhead_ms " ]
}

@test "pn-sum --framework warns where a CPU step's fresh pages are above a tenth of it, with their share" {
	paged_step
	[ "$status" -eq 0 ]
	share=$(echo "100 * $(col "$T/out" page_ms 1) / $(col "$T/out" iteration_ms 1)" | bc -l)
	[ "$(echo "$share > 10" | bc)" = 1 ]
	grep -q "^pn-sum: warning: fresh pages (step.page) are $(printf '%.0f' "$share")% of the step on UCPU (page_ms " "$T/err"
}

@test "pn-sum --framework's fresh-page warning names the CPU of the largest share and counts the others" {
	head -n 2 "$F/net.tsv" >"$T/net.tsv"
	paged 40
	# UCPU2: UCPU's twin with a 1000x slower memory, whose step is
	# longer and so less of it fresh pages
	awk -F'\t' -v OFS='\t' 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; print; next }
		{ print } $1 == "UCPU" { $1 = "UCPU2"; $c["mem_bw_gbs"] /= 1000; print }' \
		"$T/cpu.tsv" >"$T/cpu2.tsv"
	run_io pn-sum --fallback roofline -g "$T/cpu2.tsv" -d UCPU2,UCPU -b 4 --framework "$T/p.tsv" "$T/net.tsv"
	[ "$status" -eq 0 ]
	share() { awk -F'\t' -v d="$1" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["device"] == d { printf "%.0f", 100 * $c["page_ms"] / $c["iteration_ms"] }' "$T/out"; }
	[ "$(share UCPU2)" -gt 10 ]
	[ "$(share UCPU)" -gt "$(share UCPU2)" ]
	[ "$(grep -c warning "$T/err")" = 1 ]
	grep -q "fresh pages (step.page) are $(share UCPU)% of the step on UCPU (page_ms .* ms, above 10% on 1 more): " "$T/err"
}

@test "pn-sum --framework does not warn of fresh pages below a tenth of a CPU step" {
	head -n 2 "$F/net.tsv" >"$T/net.tsv"
	paged 0.001
	run_io pn-sum $C --framework "$T/p.tsv" "$T/net.tsv"
	[ "$status" -eq 0 ]
	awk -v p="$(col "$T/out" page_ms 1)" 'BEGIN { exit !(p > 0) }'
	[ ! -s "$T/err" ]
}

@test "pn-sum --framework's step.page charges SGD without momentum no optimizer temporaries" {
	head -n 2 "$F/net.tsv" >"$T/net.tsv"
	paged 4096
	pn-sum $C --optimizer sgd --framework "$F/profile.tsv" "$T/net.tsv" >"$T/without"
	run_io pn-sum $C --optimizer sgd --framework "$T/p.tsv" "$T/net.tsv"
	[ "$status" -eq 0 ]
	[ "$(col "$T/out" opt_ms 1)" = "$(col "$T/without" opt_ms 1)" ]
	[ "$(col "$T/out" train_ms 1)" != "$(col "$T/without" train_ms 1)" ]
}

@test "pn-sum --framework's step.page costs a GPU's training step nothing" {
	head -n 2 "$F/net.tsv" >"$T/net.tsv"
	paged 4096
	pn-sum $A --framework "$F/profile.tsv" "$T/net.tsv" >"$T/without"
	run_io pn-sum $A --framework "$T/p.tsv" "$T/net.tsv"
	[ "$status" -eq 0 ]
	cmp "$T/out" "$T/without"
	# the same step on the CPU twin pays its pages
	pn-sum $C --framework "$F/profile.tsv" "$T/net.tsv" >"$T/cwithout"
	pn-sum $C --framework "$T/p.tsv" "$T/net.tsv" >"$T/cpu"
	! cmp -s "$T/cpu" "$T/cwithout"
}

@test "pn-sum --framework's step.page costs an inference network nothing" {
	printf 'name\tlayer\top\tphase\tbatch\tin_features\tout_features\tbias\tprecision\toptimizer\n' >"$T/net.tsv"
	printf 'fc\tdense\tdense\tfwd\t1\t64\t32\t1\tfp32\tnone\n' >>"$T/net.tsv"
	paged 4096
	pn-sum $C --framework "$F/profile.tsv" "$T/net.tsv" >"$T/without"
	run_io pn-sum $C --framework "$T/p.tsv" "$T/net.tsv"
	[ "$status" -eq 0 ]
	cmp "$T/out" "$T/without"
}

@test "pn-sum --framework refuses a row whose cost the profile lacks" {
	grep -v '^lstm.bwd.step' "$F/profile.tsv" >"$T/p.tsv"
	refused "pn-sum: $F/net.tsv:5: the framework profile '$T/p.tsv' has no cost 'lstm.bwd.step'"
}

@test "pn-sum --framework refuses a training network when the profile has no step cost" {
	grep -v '^step' "$F/profile.tsv" >"$T/p.tsv"
	refused "pn-sum: $F/net.tsv: the framework profile '$T/p.tsv' has no cost 'step'"
}

@test "a framework profile with a repeated cost is refused" {
	prof 'step	1' 'opt.sgd	2' 'step	3'
	refused "pn-sum: $T/p.tsv:4: column 'cost': 'step' is repeated"
}

@test "a framework profile with a negative cost is refused" {
	prof 'step	-1'
	refused "pn-sum: $T/p.tsv:2: column 'us': '-1' is too small (at least 0)"
}

@test "a framework profile without a us column is refused" {
	printf 'cost\ttime\nstep\t1\n' >"$T/p.tsv"
	refused "pn-sum: $T/p.tsv:1: missing column 'us'"
}

@test "a framework profile without costs is refused" {
	prof
	sed -i '2d' "$T/p.tsv"
	refused "pn-sum: $T/p.tsv: no costs"
}

@test "a framework profile with an empty cost name is refused" {
	prof '	1'
	refused "pn-sum: $T/p.tsv:2: column 'cost': empty name"
}

@test "the shipped PyTorch CPU profile has every cost the test network needs" {
	run_io pn-sum $A --framework "$PN_ROOT/samples/frameworks/torch-1.13-cpu.tsv" "$F/net.tsv"
	[ "$status" -eq 0 ]
	[ ! -s "$T/err" ]
}

@test "pn-sum --help and its manual describe --framework" {
	run pn-sum --help
	[ "$status" -eq 0 ]
	[[ $output == *"--framework FILE    add a framework's fixed costs per op"* ]]
	grep -q '^\.SH FRAMEWORK OVERHEAD$' "$PN_ROOT/man/pn-sum.1"
	grep -q '^\.BR \\-\\-framework =\\fIFILE\\fR$' "$PN_ROOT/man/pn-sum.1"
}

# mem_net: a copy of 1000 elements forward and backward, in $T/mem.tsv
mem_net() {
	printf 'name\tlayer\top\tphase\trepeat\telements\tprecision\n' >"$T/mem.tsv"
	printf 'copy\tmem\tmem\tfwd\t1\t1000\tfp32\ncopy\tmem\tmem\tbwd\t1\t1000\tfp32\n' >>"$T/mem.tsv"
}

@test "pn-sum --framework gives a mem row the elementwise costs when the profile names no mem cost" {
	mem_net
	run_io pn-sum $A --framework "$F/profile.tsv" --per-layer "$T/mem.tsv"
	[ "$status" -eq 0 ]
	# elementwise 1 + 2 us
	[ "$(column "$T/out" overhead_ms | tr '\n' ' ')" = "0.001 0.002 " ]
}

@test "pn-sum --framework gives a mem row the profile's own mem costs where it names them" {
	mem_net
	{ cat "$F/profile.tsv"; printf 'mem.fwd\t5\ta copy\nmem.bwd\t6\ta copy\n'; } >"$T/p.tsv"
	run_io pn-sum $A --framework "$T/p.tsv" --per-layer "$T/mem.tsv"
	[ "$status" -eq 0 ]
	[ "$(column "$T/out" overhead_ms | tr '\n' ' ')" = "0.005 0.006 " ]
}
