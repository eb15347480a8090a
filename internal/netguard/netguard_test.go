package netguard

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"
)

func TestPublicAddr(t *testing.T) {
	for _, tt := range []struct {
		ip     string
		public bool
	}{
		{"8.8.8.8", true}, {"2001:4860::8888", true},
		{"127.0.0.1", false}, {"127.9.9.9", false}, {"::1", false}, {"10.1.2.3", false},
		{"172.16.0.1", false}, {"192.168.1.1", false}, {"169.254.169.254", false}, {"fe80::1", false},
		{"fc00::1", false}, {"0.0.0.0", false}, {"::", false}, {"100.64.0.1", false}, {"224.0.0.1", false},
		{"::ffff:127.0.0.1", false}, {"::ffff:10.0.0.1", false}, {"64:ff9b::a00:1", false}, {"255.255.255.255", false},
	} {
		if got := PublicAddr(netip.MustParseAddr(tt.ip)); got != tt.public {
			t.Errorf("PublicAddr(%s) = %v", tt.ip, got)
		}
	}
}

func TestDialerRefusesLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, err = Dialer(false, time.Second).DialContext(context.Background(), "tcp", ln.Addr().String())
	if !errors.Is(err, ErrPrivateAddress) {
		t.Fatalf("guarded dial to loopback: %v", err)
	}
	c, err := Dialer(true, time.Second).DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("allowed dial: %v", err)
	}
	c.Close()
}
