package netguard

import (
	"errors"
	"net"
)

// IsTimeout says whether err is a network operation that timed out (a
// dial, a read): the crawler's and the peer's error kinds both count it.
func IsTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
