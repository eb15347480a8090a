package trust

import "testing"

func TestPolicy(t *testing.T) {
	p := Policy{}.WithDefaults()
	if p.Distrusts(100, 3) || !p.Distrusts(0, 3) || p.Distrusts(0, 2) {
		t.Error("distrust bound: want 3 refutations and a false share over 10%")
	}
	if p.Vouches(7, 0) || !p.Vouches(8, 0) || p.Vouches(8, 1) || !p.Vouches(40, 1) {
		t.Error("vouching: want 8 confirmations and a false share under 5%")
	}
	if p.Sample(false, 0, 0) != 4 || p.Sample(true, 0, 100) != 1 || (Policy{Checks: -1}).WithDefaults().Sample(false, 0, 0) != 0 {
		t.Error("sample sizes: want 4, 1 once vouched, none when off")
	}
	if p.Sample(false, 500, 1000) != 4 || p.Sample(true, 49, 1000) != 1 || p.Sample(true, 50, 1000) != 0 {
		t.Error("budget: want 5% of the polls for vouched sources, none for the others")
	}
}
