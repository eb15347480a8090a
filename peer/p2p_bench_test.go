package peer

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/cocrawl/cocrawl/peer/p2p"
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
		newcomer := startMemPeer(b, benchConfig(), p2p.Config{Community: fmt.Sprintf("join%d", n), Bootstrap: ps[0].P2PAddrs()[:1],
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
		const window = time.Minute
		var total int64
		for _, d := range dhtBytesAtRest(b, ps, window) {
			total += d
		}
		b.ReportMetric(float64(total)/float64(len(ps))/window.Minutes(), "B/peer/min")
		stopAll(ps)
	}
}

// benchConfig is a peer that merges rarely: discovery is what is measured.
func benchConfig() Config {
	c := testConfig(nil, "sharing-hybrid")
	c.Slots = 1
	c.Schedule = MergeSchedule{MergeMin: time.Hour, MergeMax: time.Hour}
	return c
}

func p2pCommunitySchedule(b testing.TB, n int, name string, every, most time.Duration) []*memPeer {
	boot := startMemPeer(b, benchConfig(), p2p.Config{Community: name, FindEvery: every, FindMax: most})
	ps := []*memPeer{boot}
	for range n - 1 {
		ps = append(ps, startMemPeer(b, benchConfig(), p2p.Config{Community: name, Bootstrap: boot.P2PAddrs()[:1], FindEvery: every, FindMax: most}))
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

// BenchmarkDHTTrafficClientVsServer measures, in one community of 10 at
// rest, the DHT bytes of the 5 peers that run it as clients (private
// reachability, as behind NAT) against the 5 that serve it: the traffic a
// NATed peer is spared by not serving.
func BenchmarkDHTTrafficClientVsServer(b *testing.B) {
	for range b.N {
		boot := startMemPeer(b, benchConfig(), p2p.Config{Community: "cvs", FindEvery: time.Minute, FindMax: time.Minute, Reachability: p2p.ReachabilityPublic})
		ps := []*memPeer{boot}
		for i := range 9 {
			reach := p2p.ReachabilityPublic
			if i >= 4 {
				reach = p2p.ReachabilityPrivate
			}
			ps = append(ps, startMemPeer(b, benchConfig(), p2p.Config{Community: "cvs", Bootstrap: boot.P2PAddrs()[:1],
				FindEvery: time.Minute, FindMax: time.Minute, Reachability: reach}))
		}
		const window = time.Minute
		var server, client float64
		for i, d := range dhtBytesAtRest(b, ps, window) {
			if nodeOf(ps[i]).DHTServing() {
				server += float64(d)
			} else {
				client += float64(d)
			}
		}
		server, client = server/5/window.Minutes(), client/5/window.Minutes()
		b.ReportMetric(server, "server-B/peer/min")
		b.ReportMetric(client, "client-B/peer/min")
		b.ReportMetric(client/server, "client/server")
		stopAll(ps)
	}
}

// dhtBytesAtRest waits until every peer knows the others, lets the joining
// traffic end, and returns each peer's DHT bytes (in and out) over window.
func dhtBytesAtRest(b *testing.B, ps []*memPeer, window time.Duration) []int64 {
	waitForB(b, 2*time.Minute, func() bool {
		for _, p := range ps {
			if knows(p, ps) < len(ps)-1 {
				return false
			}
		}
		return true
	})
	time.Sleep(10 * time.Second)
	before := make([]int64, len(ps))
	for i, p := range ps {
		st := p.node.Status()
		before[i] = st.DHTIn + st.DHTOut
	}
	time.Sleep(window)
	deltas := make([]int64, len(ps))
	for i, p := range ps {
		st := p.node.Status()
		deltas[i] = st.DHTIn + st.DHTOut - before[i]
	}
	return deltas
}
