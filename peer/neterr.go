package peer

import (
	"errors"
	"syscall"

	"github.com/cocrawl/cocrawl/protocol"
)

func isRefused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, protocol.ErrPrivateAddress)
}
