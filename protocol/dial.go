package protocol

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/cocrawl/cocrawl/internal/netguard"
)

// ErrPrivateAddress is returned when a peer-supplied URL leads to a
// loopback, private, link-local or otherwise non-public address and the
// operator has not allowed private addresses.
var ErrPrivateAddress = netguard.ErrPrivateAddress

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
	d := netguard.Dialer(o.AllowPrivate, 10*time.Second)
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
