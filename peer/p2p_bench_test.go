package peer

import (
	"fmt"
	"math"
	"testing"
	"time"
)

// Time until a newly joined peer knows 90% of a community of n, on
// loopback TCP and QUIC, with the default lookup schedule (2 s, doubling).
func benchmarkJoin(b *testing.B, n int) {
	for range b.N {
		b.StopTimer()
		ps := p2pCommunitySchedule(b, n, fmt.Sprintf("join%d", n), 2*time.Second, time.Minute)
		need := int(math.Ceil(0.9 * float64(n-1)))
		waitForB(b, 2*time.Minute, func() bool {
			for _, p := range ps {
				if knows(p, ps) < need {
					return false
				}
			}
			return true
		})
		b.StartTimer()
		start := time.Now()
		newcomer := startMemPeer(b, benchConfig(), P2PConfig{Community: fmt.Sprintf("join%d", n), Bootstrap: ps[0].P2PAddrs()[:1],
			FindEvery: 2 * time.Second, FindMax: time.Minute})
		target := int(math.Ceil(0.9 * float64(n)))
		waitForB(b, 2*time.Minute, func() bool { return knows(newcomer, ps) >= target })
		b.ReportMetric(time.Since(start).Seconds(), "s-to-90%")
		b.StopTimer()
		stopAll(append(ps, newcomer))
	}
}

func BenchmarkJoinCommunityOf10(b *testing.B) { benchmarkJoin(b, 10) }
func BenchmarkJoinCommunityOf50(b *testing.B) { benchmarkJoin(b, 50) }

// DHT bytes per peer per minute in a community of 10 at rest: converged,
// looking the namespace up once a minute, refreshing its table once a
// minute, re-advertising hourly.
func BenchmarkDHTTrafficAtRest(b *testing.B) {
	for range b.N {
		ps := p2pCommunitySchedule(b, 10, "rest", time.Minute, time.Minute)
		waitForB(b, 2*time.Minute, func() bool {
			for _, p := range ps {
				if knows(p, ps) < 9 {
					return false
				}
			}
			return true
		})
		time.Sleep(10 * time.Second) // let joining traffic end
		before := make([]int64, len(ps))
		for i, p := range ps {
			in, out := p.p2p.dhtBytes()
			before[i] = in + out
		}
		const window = time.Minute
		time.Sleep(window)
		var total int64
		for i, p := range ps {
			in, out := p.p2p.dhtBytes()
			total += in + out - before[i]
		}
		b.ReportMetric(float64(total)/float64(len(ps))/window.Minutes(), "B/peer/min")
		stopAll(ps)
	}
}

// benchConfig is a peer that merges rarely: discovery is what is measured.
func benchConfig() Config {
	c := testConfig(nil, "sharing-hybrid")
	c.Slots = 1
	c.Schedule = Schedule{MergeMin: time.Hour, MergeMax: time.Hour}
	return c
}

func p2pCommunitySchedule(b testing.TB, n int, name string, every, most time.Duration) []*memPeer {
	boot := startMemPeer(b, benchConfig(), P2PConfig{Community: name, FindEvery: every, FindMax: most})
	ps := []*memPeer{boot}
	for range n - 1 {
		ps = append(ps, startMemPeer(b, benchConfig(), P2PConfig{Community: name, Bootstrap: boot.P2PAddrs()[:1], FindEvery: every, FindMax: most}))
	}
	return ps
}

func waitForB(b *testing.B, d time.Duration, cond func() bool) {
	b.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			b.Fatalf("not reached after %v", d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
