#!/usr/bin/env bats
# pn-fit --logo: the model refitted without each training device, and the
# "logo DEVICE N BIAS SD" lines it records in the model file.

load test_helper
load fit_helper

setup() {
	fit_setup
	three >train3.tsv
}

# three: the training rows (dense and bmm on T4 and V100) and the T4 rows
# again as a third device, P100-PCIE-16GB, 1.5 times slower.
three() {
	awk -F'\t' -v OFS='\t' -v CONVFMT=%.17g 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
		{ print } $h["device"] == "T4" { $h["device"] = "P100-PCIE-16GB"; $h["time_ms"] *= 1.5; extra[++n] = $0 }
		END { for (i = 1; i <= n; i++) print extra[i] }' "$F/train.tsv"
}

# logo LAYER DEVICE MODEL: the logo line of that layer's model
logo() {
	awk -v l="$1" -v d="$2" '$1 == "layer" { cur = $2 } cur == l && $1 == "logo" && $2 == d' "$3"
}

@test "pn-fit --logo records one logo line per device of every layer type, by device name" {
	run_io pn-fit -f lr -F flops -l --logo -o a.model train3.tsv
	[ "$status" -eq 0 ]
	[ "$(awk '$1 == "layer" { l = $2 } $1 == "logo" { print l, $2 }' a.model | tr '\n' ';')" = "bmm P100-PCIE-16GB;bmm T4;bmm V100-PCIE-32GB;dense P100-PCIE-16GB;dense T4;dense V100-PCIE-32GB;" ]
}

@test "pn-fit --logo records the bias and sd of ln(predicted / measured) of a fit without the device" {
	pn-fit -f lr -F flops -l --logo -o a.model train3.tsv
	for d in T4 V100-PCIE-32GB P100-PCIE-16GB; do
		awk -F'\t' -v d="$d" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "device") c = i; print; next } $c != d' train3.tsv >in.tsv
		awk -F'\t' -v d="$d" 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "device") c = i; print; next } $c == d' train3.tsv >out.tsv
		pn-fit -f lr -F flops -l -o b.model in.tsv
		pn-eval -m b.model --metrics /dev/null out.tsv >pred.tsv
		for l in dense bmm; do
			want=$(awk -F'\t' -v l="$l" 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; next }
				$1 == l { r = log($h["pred_ms"] / $h["time_ms"]); s += r; ss += r * r; n++ }
				END { m = s / n; printf "%d %.12g %.12g\n", n, m, sqrt(ss / n - m * m) }' pred.tsv)
			got=$(logo "$l" "$d" a.model)
			[ -n "$got" ]
			awk -v w="$want" -v g="$got" 'BEGIN { split(w, a, " "); split(g, b, " ")
				if (a[1] != b[3]) exit 1
				for (i = 2; i <= 3; i++) { d = a[i] - b[i + 2]; if (d < 0) d = -d; if (d > 1e-6 * (a[i] < 0 ? -a[i] : a[i]) + 1e-9) exit 1 } }' ||
				{ echo "$l $d: want $want, got $got"; return 1; }
		done
	done
}

@test "pn-fit --logo leaves the model's predictions as they are without it" {
	pn-fit -f lr -F flops -l --logo -o a.model train3.tsv
	pn-fit -f lr -F flops -l -o b.model train3.tsv
	pn-eval -m a.model --metrics /dev/null "$F/test.tsv" >a.tsv
	pn-eval -m b.model --metrics /dev/null "$F/test.tsv" >b.tsv
	cmp a.tsv b.tsv
}

@test "pn-fit --logo writes the same model for the same seed" {
	pn-fit -f rf -p trees=5 -F flops -l --logo -s 7 -o a.model train3.tsv
	pn-fit -f rf -p trees=5 -F flops -l --logo -s 7 -o b.model train3.tsv
	cmp a.model b.model
}

@test "pn-fit --logo fits with a validation file of the same devices" {
	three_val() {
		awk -F'\t' -v OFS='\t' -v CONVFMT=%.17g 'NR == 1 { for (i = 1; i <= NF; i++) h[$i] = i; print; next }
			{ print } $h["device"] == "T4" { $h["device"] = "P100-PCIE-16GB"; $h["time_ms"] *= 1.5; print }' "$F/val.tsv"
	}
	three_val >val3.tsv
	run_io pn-fit -f gbdt -p rounds=20 -F flops -l --logo -v val3.tsv -o a.model train3.tsv
	[ "$status" -eq 0 ]
	[ "$(grep -c '^logo ' a.model)" -eq 6 ]
}

@test "pn-fit --logo needs rows of at least 3 devices" {
	run_io pn-fit -f lr -F flops -l --logo -o a.model "$F/train.tsv"
	[ "$status" -eq 1 ]
	[ "$(cat err)" = "pn-fit: $F/train.tsv: --logo needs rows of at least 3 devices; layer 'bmm' has 2" ]
	[ ! -e a.model ]
}

@test "pn-fit --logo needs a device column" {
	cut -f1-9,11- train3.tsv >nodev.tsv
	run_io pn-fit -f lr -F flops -l --logo -o a.model nodev.tsv
	[ "$status" -eq 1 ]
	[[ "$(cat err)" == *"'device'"* ]]
}

@test "pn-fit --logo needs a log or relative target" {
	run_io pn-fit -f lr -F flops --logo -o a.model train3.tsv
	[ "$status" -eq 2 ]
	[ "$(head -1 err)" = "pn-fit: --logo needs --log-target or --relative (it records errors on a log scale)" ]
}

@test "pn-fit --logo rejects a device name with a space" {
	awk -F'\t' -v OFS='\t' 'NR == 2 { $10 = "my gpu" } { print }' train3.tsv >sp.tsv
	run_io pn-fit -f lr -F flops -l --logo -o a.model sp.tsv
	[ "$status" -eq 1 ]
	[ "$(cat err)" = "pn-fit: sp.tsv:2: column 'device': 'my gpu' has a space and cannot be recorded in a model (--logo)" ]
}

# corrupt LINE: the model with its first logo line replaced by LINE, read
corrupt() {
	pn-fit -f lr -F flops -l --logo -o a.model train3.tsv
	awk -v r="$1" '$1 == "logo" && !done { print r; done = 1; next } { print }' a.model >c.model
	run_io pn-eval -m c.model "$F/test.tsv"
	at=$(grep -n "^$1\$" c.model | head -1 | cut -d: -f1)
}

@test "a model reader rejects a logo line without four values" {
	corrupt "logo T4 10 0.1"
	[ "$status" -eq 1 ]
	[ "$(cat err)" = "pn-eval: c.model:$at: corrupt model: 'logo' needs a device, a row count, a bias and an sd" ]
}

@test "a model reader rejects a logo line with a negative sd" {
	corrupt "logo T4 10 0.1 -0.2"
	[ "$status" -eq 1 ]
	[ "$(cat err)" = "pn-eval: c.model:$at: corrupt model: logo sd: '-0.2' is negative" ]
}

@test "a model reader rejects a logo line with a row count that is not whole" {
	corrupt "logo T4 2.5 0.1 0.2"
	[ "$status" -eq 1 ]
	[ "$(cat err)" = "pn-eval: c.model:$at: corrupt model: logo rows: '2.5' is not a count of at least 1" ]
}

@test "a model reader rejects a logo bias that is not a number" {
	corrupt "logo T4 10 x 0.2"
	[ "$status" -eq 1 ]
	[ "$(cat err)" = "pn-eval: c.model:$at: corrupt model: logo bias: 'x' is not a number" ]
}

@test "a model reader rejects a device listed twice in the logo lines" {
	pn-fit -f lr -F flops -l --logo -o a.model train3.tsv
	awk '$1 == "logo" && !done { print; print; done = 1; next } { print }' a.model >c.model
	run_io pn-eval -m c.model "$F/test.tsv"
	at=$(grep -n "^logo " c.model | sed -n 2p | cut -d: -f1)
	[ "$status" -eq 1 ]
	[[ "$(cat err)" == "pn-eval: c.model:$at: corrupt model: logo: device '"*"' listed twice" ]]
}
