#!/usr/bin/env bats
# pn-sum against NeuSight's published roofline predictions: the same op
# graphs, spec sheets and formulas must give the same numbers.
load test_helper

N="$PN_ROOT/samples/neusight"

# Every published roofline prediction (device, tag, fw, bw, acc, e2e), one
# line each; tag is the graph's name.
# A published graph as NeuSight predicts it: every entry of its nodes' op
# lists (pn-graph --neusight), num_layer from its model's config.
neusight_ops() {
	local args=(--neusight)
	case $1 in
	*-fusion | switch*) ;;
	*) args+=(--config "$N/model_configs/${1%%-*}.json") ;;
	esac
	pn-graph "${args[@]}" "$N/opgraph/$1.csv.gz"
}

roofline_predictions() {
	zcat "$N/predictions.tsv.gz" | awk -F'\t' -v OFS='\t' '
		NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["predictor"] == "roofline" {
			tag = $c["model"] "-" $c["mode"] "-" $c["seq"] "-" $c["batch"]
			if ($c["variant"] != "NA") tag = tag "-" $c["variant"]
			print $c["device"], tag, $c["fw_latency"], $c["bw_latency"],
			      $c["acc_latency"], $c["e2e_latency"]
		}'
}

@test "the golden set holds 108 roofline predictions of 24 graphs on 7 GPUs" {
	roofline_predictions >"$BATS_TEST_TMPDIR/p"
	[ "$(wc -l <"$BATS_TEST_TMPDIR/p")" -eq 108 ]
	[ "$(cut -f2 "$BATS_TEST_TMPDIR/p" | sort -u | wc -l)" -eq 24 ]
	[ "$(cut -f1 "$BATS_TEST_TMPDIR/p" | sort -u | wc -l)" -eq 7 ]
}

@test "pn-sum --fallback roofline reproduces every published roofline prediction to 1e-6" {
	roofline_predictions >"$BATS_TEST_TMPDIR/p"
	n=0
	for tag in $(cut -f2 "$BATS_TEST_TMPDIR/p" | sort -u); do
		devs=$(awk -F'\t' -v t="$tag" '$2 == t {print $1}' "$BATS_TEST_TMPDIR/p" | paste -sd,)
		neusight_ops "$tag" | pn-sum --fallback roofline --gpuspecs "$N/gpus-neusight.tsv" \
			-d "$devs" >"$BATS_TEST_TMPDIR/s"
		# published fw bw acc e2e against fwd_ms bwd_ms acc_ms iteration_ms
		bad=$(awk -F'\t' -v t="$tag" '
			function off(a, b) { d = a - b; if (d < 0) d = -d; return b == 0 ? d != 0 : d > 1e-6 * b }
			NR == FNR { if ($2 == t) { fw[$1] = $3; bw[$1] = $4; acc[$1] = $5; e2e[$1] = $6 }; next }
			FNR > 1 {
				n++
				if (off($4, fw[$2]) || off($5, bw[$2]) || off($6, acc[$2]) || off($9, e2e[$2]))
					print t, $2, $4, $5, $6, $9, "published", fw[$2], bw[$2], acc[$2], e2e[$2]
			}' "$BATS_TEST_TMPDIR/p" "$BATS_TEST_TMPDIR/s")
		[ -z "$bad" ] || { echo "$bad"; return 1; }
		n=$((n + $(tail -n +2 "$BATS_TEST_TMPDIR/s" | wc -l)))
	done
	[ "$n" -eq 108 ]
}

@test "pn-sum's roofline of one GPT-2 large training step on an L4 is NeuSight's to 1e-7" {
	neusight_ops gpt2_large-train-1024-1 >"$BATS_TEST_TMPDIR/g"
	run pn-sum --fallback roofline --gpuspecs "$N/gpus-neusight.tsv" -d L4 "$BATS_TEST_TMPDIR/g"
	[ "$status" -eq 0 ]
	# prediction/NVIDIA_L4/roofline/gpt2_large-train-1024-1.json: e2e_latency
	awk -F'\t' 'NR == 2 { d = $9 - 592.9695884476946; if (d < 0) d = -d; exit !(d < 1e-7 * 592.97) }' <<<"$output"
}
