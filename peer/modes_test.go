package peer

import "testing"

func TestResolveMode(t *testing.T) {
	tests := []struct {
		mode, rho  string
		share, set bool
		name, ctl  string
		wantShare  bool
		bad        bool
	}{
		{name: "sharing-hybrid", ctl: "rate", wantShare: true},
		{mode: "current", name: "current", ctl: "fixed:1"},
		{mode: "altruistic", name: "altruistic", ctl: "fixed:1", wantShare: true},
		{mode: "parasite", name: "parasite", ctl: "fixed:0"},
		{mode: "mirror", name: "mirror", ctl: "fixed:0", wantShare: true},
		{mode: "hybrid", name: "hybrid", ctl: "rate"},
		{mode: "hybrid", rho: "bangbang", name: "hybrid", ctl: "bangbang"},
		{rho: "0.3", name: "sharing-hybrid", ctl: "fixed:0.3", wantShare: true},
		{rho: "1", share: false, set: true, name: "current", ctl: "fixed:1"},
		{rho: "0", name: "mirror", ctl: "fixed:0", wantShare: true},
		{mode: "mirror", rho: "0.5", bad: true},
		{mode: "current", share: true, set: true, bad: true},
		{mode: "nosy", bad: true},
		{rho: "pid", bad: true},
	}
	for _, tt := range tests {
		var share *bool
		if tt.set {
			share = &tt.share
		}
		b, err := ResolveMode(tt.mode, tt.rho, share)
		if tt.bad {
			if err == nil {
				t.Errorf("%+v accepted as %s", tt, b.Name)
			}
			continue
		}
		if err != nil || b.Name != tt.name || b.Controller.Name() != tt.ctl || b.Share != tt.wantShare {
			t.Errorf("%+v: got %s %v share %v, %v", tt, b.Name, b.Controller, b.Share, err)
		}
	}
}
