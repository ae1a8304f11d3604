#!/usr/bin/env bats
# A corrupt model file never crashes pn-eval or pn-sum and never makes them
# allocate what the file cannot hold: it is refused with exit 1 and
# "corrupt model" at its line.  xgb bodies carry a CRC-32 and their booster
# is checked before libxgboost reads it (src/lib/fam_xgb.c, ubj.h); the
# counts of every family are checked against the lines that follow.

load test_helper
load fit_helper

setup() {
	fit_setup
	M="$FIX/fit-mlp"
}

# xgb OUT: a small xgb model of the smooth rows (3 rounds of depth 2).
xgb() {
	pn-fit -f xgb -F x1,x2,x3 --no-by-layer -p rounds=3 -p depth=2 -o "$1" "$M/smooth.tsv"
}

# booster MODEL OUT PERL [keep]: MODEL with its booster decoded into $_,
# changed by the perl code PERL and encoded again into OUT, with its byte
# count and (unless keep) its crc32 made to match.
booster() {
	perl -MMIME::Base64 -MCompress::Zlib -e '
		my ($in, $out, $code, $keep) = @ARGV;
		open my $f, "<", $in or die "$in: $!";
		my @l = <$f>;
		my $b = join "", map { /^b64 (\S+)$/ ? $1 : () } @l;
		local $_ = decode_base64($b);
		eval $code;
		die $@ if $@;
		my $body = $_;
		my $enc = encode_base64($body, "");
		my @b64 = map { "b64 $_\n" } $enc =~ /(.{1,76})/g;
		open my $o, ">", $out or die "$out: $!";
		for (@l) {
			if (/^bytes /) { print $o "bytes ", length($body), "\n"; next }
			if (/^crc32 / && !$keep) { printf $o "crc32 %08x\n", crc32($body); next }
			if (/^b64 /) { print $o @b64; @b64 = (); next }
			print $o $_;
		}' "$@"
}

# refused FILE LINE MESSAGE: pn-eval refuses model FILE at LINE with
# "corrupt model: MESSAGE" and exit 1, writing no row.
refused() {
	run_io pn-eval -m "$1" "$M/test.tsv"
	[ "$status" -eq 1 ] || { cat "$T/err"; echo "exit $status"; return 1; }
	[ ! -s "$T/out" ]
	echo "pn-eval: $1:$2: corrupt model: $3" | diff - "$T/err"
}

# bad_booster PERL MESSAGE: the small model with its booster changed by
# PERL (crc32 made to match) is refused at its 'end' line with MESSAGE.
bad_booster() {
	xgb a.model
	booster a.model bad.model "$1"
	refused bad.model "$(grep -c '' bad.model)" "$2"
}

@test "pn-eval -m refuses an xgb model without a checksum and says to refit it" {
	xgb a.model
	sed '/^crc32 /d' a.model >old.model
	line=$(grep -n '^b64 ' old.model | head -1 | cut -d: -f1)
	refused old.model "$line" "xgb: no checksum (a model from an older pn): refit it with pn-fit"
}

@test "pn-eval -m refuses an xgb model with one byte of its booster changed" {
	xgb a.model
	booster a.model bad.model 'substr($_, 100, 1) = chr(ord(substr($_, 100, 1)) ^ 1)' keep
	last=$(grep -n '^b64 ' bad.model | tail -1 | cut -d: -f1)
	want=$(perl -MCompress::Zlib -MMIME::Base64 -e 'local $/; $_ = <STDIN>;
		printf "%08x", crc32(decode_base64(join "", /^b64 (\S+)$/mg))' <bad.model)
	have=$(awk '$1 == "crc32" { print $2 }' bad.model)
	[ "$want" != "$have" ]
	refused bad.model "$last" "xgb: checksum mismatch: the body's crc32 is $want, the model says $have"
}

@test "pn-eval -m refuses an xgb model whose checksum line is not 8 hex digits" {
	xgb a.model
	sed 's/^crc32 .*/crc32 0x123456/' a.model >bad.model
	line=$(grep -n '^crc32 ' bad.model | cut -d: -f1)
	refused bad.model "$line" "xgb: want 'crc32' and 8 hex digits"
}

@test "pn-eval -m refuses a 25-byte xgb booster that declares 2^24 floats and holds none" {
	xgb a.model
	booster a.model bad.model '$_ = "{L" . pack("Q>", 1) . "a[\$d#L" . pack("Q>", 1 << 24) . "}"'
	[ "$(awk '$1 == "bytes" { print $2 }' bad.model)" -eq 25 ]
	end=$(grep -c '' bad.model)
	refused bad.model "$end" "xgb: booster byte 15: typed array length 16777216: at most 0 possible"
}

@test "pn-eval -m refuses an xgb booster whose key is longer than the booster" {
	xgb a.model
	# the first key ("learner") claims 2^40 bytes; 10 fewer than the
	# booster's are left after its length
	booster a.model bad.model 'substr($_, 1, 9) = "L" . pack("Q>", 1 << 40)'
	left=$(( $(awk '$1 == "bytes" { print $2 }' bad.model) - 10 ))
	refused bad.model "$(grep -c '' bad.model)" "xgb: booster byte 1: key length 1099511627776: at most $left possible"
}

@test "pn-eval -m refuses a checksummed xgb booster whose tree has a child index out of range" {
	# the first tree's left_children: node 0's left child becomes 0x02700000
	bad_booster 's/(left_children\[\$l#L.{8})\0\0\0\x01/$1\x02\x70\0\0/s or die "no left_children"' \
		"xgb: booster tree 0 node 0: a child index out of range (feature 0, children 40894464 and 2, of 7 nodes)"
}

@test "pn-eval -m refuses a checksummed xgb booster whose split names a feature the model lacks" {
	bad_booster 's/(split_indices\[\$l#L.{8})\0\0\0\0/$1\0\0\0\x03/s or die "no split_indices"' \
		"xgb: booster tree 0 node 0: a split feature out of range (feature 3, children 1 and 2, of 7 nodes)"
}

@test "pn-eval -m refuses a checksummed xgb booster whose node is the child of two nodes" {
	# node 1's children become 3 and 5: node 5 is node 2's child too
	bad_booster 's/(right_children\[\$l#L.{8}.{4})\0\0\0\x04/$1\0\0\0\x05/s or die "no right_children"' \
		"xgb: booster tree 0 node 1: a child that names another parent (feature 1, children 3 and 5, of 7 nodes)"
}

@test "pn-eval -m refuses a checksummed xgb booster whose base score is not a number" {
	bad_booster '/base_scoreSL(.{8})/s or die; my $s = $-[0] + 12;
		substr($_, $s, 8 + unpack("Q>", $1)) = pack("Q>", 3) . "abc"' \
		"xgb: booster: 'base_score' is 'abc', want a number"
}

@test "pn-eval -m reports XGBoost's own refusal of a well-formed booster" {
	bad_booster 's/reg_loss_param/reg_loss_parax/ or die' \
		"xgb: XGBoost cannot load the model: ./include/xgboost/json.h:81: Invalid cast, from Null to Object"
}

@test "pn-sum -m refuses a corrupt xgb model instead of crashing" {
	xgb a.model
	booster a.model bad.model '$_ = "{L" . pack("Q>", 1) . "a[\$d#L" . pack("Q>", 1 << 24) . "}"'
	end=$(grep -c '' bad.model)
	run_io pn-sum -m bad.model --fallback roofline -d T4 "$FIX/sum/net.tsv"
	[ "$status" -eq 1 ]
	[ ! -s "$T/out" ]
	echo "pn-sum: bad.model:$end: corrupt model: xgb: booster byte 15: typed array length 16777216: at most 0 possible" |
		diff - "$T/err"
}

# big_count FAMILY SED FIT-OPTION...: a model of FAMILY on the featurized
# rows, its first count changed by SED, is refused as corrupt where the
# file runs out of what the count promised, not in the allocator.
big_count() {
	local fam=$1 script=$2
	shift 2
	pn-fit -f "$fam" "$@" -o m.model "$F/train.tsv"
	sed "$script" m.model >big.model
	! cmp -s m.model big.model
	run_io pn-eval -m big.model "$F/test.tsv"
	[ "$status" -eq 1 ] || { cat "$T/err"; return 1; }
	[ ! -s "$T/out" ]
}

@test "pn-eval -m refuses an rf tree whose node count the file does not hold" {
	big_count rf '0,/^tree [0-9]*$/s//tree 2000000000/' -p trees=3 -p min_leaf=1
	# the second tree's "tree" line comes where node 96 should be
	line=$(grep -n '^tree ' big.model | sed -n 2p | cut -d: -f1)
	echo "pn-eval: big.model:$line: corrupt model: node 96 of 2000000000: want 'leaf VALUE' or 'split FEATURE THRESHOLD LEFT'" |
		diff - err
}

@test "pn-eval -m refuses a gbdt tree whose node count the file does not hold" {
	big_count gbdt '0,/^tree [0-9]*$/s//tree 2000000000/' -p rounds=3 --no-log-target
	line=$(grep -n '^tree ' big.model | sed -n 2p | cut -d: -f1)
	echo "pn-eval: big.model:$line: corrupt model: node 52 of 2000000000: want 'leaf VALUE' or 'split FEATURE THRESHOLD LEFT'" |
		diff - err
}

@test "pn-eval -m refuses an mlp whose layer sizes the file does not hold" {
	big_count mlp 's/^layers .*/layers 4/; s/^sizes \([0-9]*\) .*/sizes \1 65536 65536 65536 1/' \
		-p hidden=4 -p epochs=1
	# the first layer's 65536 'w' lines end at its 'b' line
	line=$(grep -n '^b ' big.model | head -1 | cut -d: -f1)
	echo "pn-eval: big.model:$line: corrupt model: 'b', want 'w'" | diff - err
}
