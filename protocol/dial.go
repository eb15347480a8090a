package protocol

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"syscall"
	"time"
)

// ErrPrivateAddress is returned when a peer-supplied URL leads to a
// loopback, private, link-local or otherwise non-public address and the
// operator has not allowed private addresses.
var ErrPrivateAddress = errors.New("protocol: address is not public")

// PublicAddr reports whether ip may be reached by default: not loopback,
// private (RFC 1918, RFC 4193), link-local, unspecified, multicast, CGNAT,
// or IPv4 mapped into any of those.
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

// ClientOptions configure NewHTTPClient.
type ClientOptions struct {
	// AllowPrivate permits loopback and private addresses (tests, LANs).
	AllowPrivate bool
	// Timeout bounds one whole request, body included; 0 means 5 minutes.
	Timeout time.Duration
}

// NewHTTPClient returns the client the merge client uses. The address
// check runs in the dialer after name resolution, so neither a redirect nor
// a DNS answer can lead it to a private address. It does not use proxies
// from the environment, follows at most 5 redirects, and leaves gzip to the
// caller so byte limits apply to what really arrives.
func NewHTTPClient(o ClientOptions) *http.Client {
	d := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !o.AllowPrivate {
		d.Control = func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil || !PublicAddr(ap.Addr()) {
				return fmt.Errorf("%w: %s", ErrPrivateAddress, address)
			}
			return nil
		}
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Minute
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			DialContext:            d.DialContext,
			DisableCompression:     true,
			ForceAttemptHTTP2:      true,
			MaxIdleConnsPerHost:    2,
			IdleConnTimeout:        90 * time.Second,
			TLSHandshakeTimeout:    10 * time.Second,
			ResponseHeaderTimeout:  30 * time.Second,
			MaxResponseHeaderBytes: 64 << 10,
		},
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("protocol: more than 5 redirects")
			}
			if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
				return fmt.Errorf("protocol: redirect to %s scheme", req.URL.Scheme)
			}
			return nil
		},
	}
}
