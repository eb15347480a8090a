// Package iolimit fails transfers that are too slow: a reader that counts
// bytes and returns an error once, after a grace period, the average speed
// since the transfer began falls below a minimum. The crawler applies it
// to pages and the merge client to day files, so a peer or a site that
// trickles cannot hold a slot for long. A reader that gets no bytes at all
// never returns to be checked: pair it with a deadline.
package iolimit

import (
	"fmt"
	"io"
	"time"
)

// MinSpeed is a reader of R that fails with TooSlow (wrapped) when, more
// than After since Start, fewer than Min bytes per second have arrived on
// average.
type MinSpeed struct {
	R       io.Reader
	Start   time.Time
	Min     int64 // bytes per second
	After   time.Duration
	TooSlow error
	n       int64
	err     error
}

// N is the number of bytes read so far.
func (s *MinSpeed) N() int64 { return s.n }

// Err is the error that ended the transfer, if any (io.EOF is none).
func (s *MinSpeed) Err() error { return s.err }

func (s *MinSpeed) Read(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	n, err := s.R.Read(p)
	s.n += int64(n)
	if el := time.Since(s.Start); el > s.After && float64(s.n)/el.Seconds() < float64(s.Min) {
		s.err = fmt.Errorf("%w: %d bytes in %v", s.TooSlow, s.n, el.Round(time.Millisecond))
		return n, s.err
	}
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}
