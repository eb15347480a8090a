// Package netguard keeps cocrawl's outgoing connections away from addresses
// a peer or a web page should not be able to make it reach: loopback,
// private, link-local and other non-public ranges. The check runs in the
// dialer after name resolution, so neither a DNS answer nor a redirect can
// get around it. Tests and LAN deployments turn it off explicitly.
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"
)

// ErrPrivateAddress is returned by a guarded dialer for a non-public address.
var ErrPrivateAddress = errors.New("address is not public")

// PublicAddr reports whether ip may be reached by default: not loopback,
// private (RFC 1918, RFC 4193), link-local, unspecified, multicast, CGNAT,
// benchmarking or reserved, nor IPv4 mapped or NAT64-translated into those.
func PublicAddr(ip netip.Addr) bool {
	ip = ip.Unmap()
	if !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() ||
		ip.IsLinkLocalMulticast() || ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}

var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b::/96"), // NAT64 can reach private IPv4
}

// Dialer returns a dialer that refuses non-public addresses unless
// allowPrivate is set.
func Dialer(allowPrivate bool, timeout time.Duration) *net.Dialer {
	d := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !PublicAddr(ap.Addr()) {
				return fmt.Errorf("%w: %s", ErrPrivateAddress, address)
			}
			return nil
		}
	}
	return d
}
