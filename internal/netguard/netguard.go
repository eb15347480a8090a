// Package netguard keeps cocrawl's outgoing connections away from addresses
// a peer or a web page should not be able to make it reach: loopback,
// private, link-local and other non-public ranges. The check runs in the
// dialer after name resolution, so neither a DNS answer nor a redirect can
// get around it. Tests and LAN deployments turn it off explicitly. It also
// caps the connections a listener serves at once (LimitListener).
package netguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"syscall"
	"time"

	"golang.org/x/net/netutil"
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
	// 6to4 carries an IPv4 address in bits 16 to 48, and a relay
	// delivers to it: it is as public as that address.
	if sixToFour.Contains(ip) {
		b := ip.As16()
		return PublicAddr(netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}))
	}
	return true
}

var nonPublic = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"), // carrier-grade NAT
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"), // documentation (TEST-NET-1 to 3)
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("::/96"),          // IPv4-compatible IPv6 (deprecated): ::10.0.0.1
	netip.MustParsePrefix("64:ff9b::/96"),   // NAT64 can reach private IPv4
	netip.MustParsePrefix("64:ff9b:1::/48"), // local-use NAT64 (RFC 8215): a network's own translator
	netip.MustParsePrefix("100::/64"),       // discard-only
	netip.MustParsePrefix("2001::/32"),      // Teredo: the IPv4 inside is obfuscated, so none passes
	netip.MustParsePrefix("2001:db8::/32"),  // documentation
}

var sixToFour = netip.MustParsePrefix("2002::/16")

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

// MaxInbound is how many connections a peer's listeners serve at once by
// default; more wait in the kernel's backlog until one closes. The share
// server's own limit (503 with Retry-After) counts requests; this bounds
// the sockets, idle keep-alives included, that strangers can hold open.
const MaxInbound = 512

// LimitListener caps the connections ln serves at once at n
// (golang.org/x/net/netutil).
func LimitListener(ln net.Listener, n int) net.Listener { return netutil.LimitListener(ln, n) }
