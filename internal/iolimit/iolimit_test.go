package iolimit

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

var errSlow = errors.New("slow")

type drip struct{ every time.Duration }

func (d drip) Read(p []byte) (int, error) {
	time.Sleep(d.every)
	p[0] = 'x'
	return 1, nil
}

func TestMinSpeed(t *testing.T) {
	r := &MinSpeed{R: drip{10 * time.Millisecond}, Start: time.Now(), Min: 1000, After: 100 * time.Millisecond, TooSlow: errSlow}
	_, err := io.Copy(io.Discard, r)
	if !errors.Is(err, errSlow) {
		t.Fatalf("a drip of 100 B/s against a minimum of 1,000: %v", err)
	}
	fast := &MinSpeed{R: strings.NewReader(strings.Repeat("y", 1<<20)), Start: time.Now(), Min: 1000, After: 0, TooSlow: errSlow}
	if n, err := io.Copy(io.Discard, fast); err != nil || n != 1<<20 {
		t.Fatalf("a fast read: %d bytes, %v", n, err)
	}
}
