package peer

import (
	"errors"
	"net"
	"syscall"

	"github.com/cocrawl/cocrawl/protocol"
)

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

func isRefused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, protocol.ErrPrivateAddress)
}
