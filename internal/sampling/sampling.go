package sampling

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Intervals returns a source of waits uniform over [period/2,
// 3·period/2], a mean of period, drawn from seed.
func Intervals(period time.Duration, seed uint64) func() time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0x5a3b1e))
	return func() time.Duration {
		return period/2 + time.Duration(rng.Int64N(int64(period)+1))
	}
}

// Ticker delivers the time on C at intervals from Intervals: a
// time.Ticker whose ticks fall at random phases. As with time.Ticker, a
// tick not yet read when the next comes is dropped.
type Ticker struct {
	C    <-chan time.Time
	stop chan struct{}
	once sync.Once
}

// NewTicker starts a Ticker of mean period. Stop it when done.
func NewTicker(period time.Duration, seed uint64) *Ticker {
	c := make(chan time.Time, 1)
	t := &Ticker{C: c, stop: make(chan struct{})}
	next := Intervals(period, seed)
	timer := time.NewTimer(next())
	go func() {
		defer timer.Stop()
		for {
			select {
			case <-t.stop:
				return
			case now := <-timer.C:
				select {
				case <-t.stop: // both ready: no tick after Stop
					return
				default:
				}
				select {
				case c <- now:
				default:
				}
				timer.Reset(next())
			}
		}
	}()
	return t
}

// Stop ends the ticks; C is not closed, as time.Ticker's is not.
func (t *Ticker) Stop() { t.once.Do(func() { close(t.stop) }) }
