# Shared by every t/*.bats: the fresh bin/ first on PATH, fixtures at hand.
PN_ROOT="$(cd "$(dirname "${BATS_TEST_FILENAME}")/.." && pwd)"
PATH="$PN_ROOT/bin:$PATH"
FIX="$PN_ROOT/t/fixtures"
export PN_ROOT PATH FIX
unset PN_GPUSPECS
