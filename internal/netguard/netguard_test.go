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
		// issue 18, item 16: local-use NAT64, IPv4-compatible IPv6, 6to4 and Teredo wrappers
		{"64:ff9b:1::a00:1", false}, {"64:ff9b:1:ffff::7f00:1", false}, {"::10.0.0.1", false}, {"::127.0.0.1", false},
		{"2002:a00:1::1", false}, {"2002:7f00:1::", false}, {"2002:c0a8:101::1", false}, {"2002:808:808::1", true},
		{"2001:0:4136:e378:8000:63bf:3fff:fdd2", false}, {"192.0.2.1", false}, {"2001:db8::1", false},
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

// A limited listener serves n connections at once; the next waits until
// one closes.
func TestLimitListener(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := LimitListener(inner, 2)
	defer ln.Close()
	accepted := make(chan net.Conn, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	for range 3 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first := <-accepted
	<-accepted
	select {
	case <-accepted:
		t.Fatal("a third connection was served while two were open")
	case <-time.After(200 * time.Millisecond):
	}
	first.Close()
	select {
	case c := <-accepted:
		c.Close()
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting connection was not served after one closed")
	}
}
