package crawl

import (
	"container/heap"
	"time"
)

// Politeness per server as well as per host. Virtual hosts on one server
// (one IP address and port) share it: the crawler sends a server at most
// Config.ServerConns requests at once, and after each waits
// Config.ServerDelayShare of the host's delay before the next to any of
// its hosts (BUbiNG's per-IP delay beside its per-host one; Heritrix's
// "queue groups"). A server is learnt from the connection that served a
// host's last request, so a host's first request is not yet grouped. A
// server serving more than Config.MaxHostsPerServer hosts polls none
// beyond them: a farm of generated host names on one machine.
type server struct {
	addr        string
	hosts       int       // hosts learnt to be on it
	inFlight    int       // requests to it now
	nextAllowed time.Time // after the last request's share of delay
	parked      []*host   // hosts ready while it was at its limit
}

// The defaults of Config's per-server politeness.
const (
	DefaultServerDelayShare  = 0.25
	DefaultMaxHostsPerServer = 1000
)

// serverPolicy is the frontier's per-server politeness.
type serverPolicy struct {
	conns      int     // requests in flight per server
	delayShare float64 // of the host's delay, between two requests to a server
	maxHosts   int     // hosts polled per server
}

// assignServer records the server that answered the host's request; a
// host past its server's cap is refused from now on. h is busy. It
// reports whether the host was newly refused.
func (f *frontier) assignServer(h *host, addr string) bool {
	if addr == "" || h.server != nil && h.server.addr == addr || h.overServerCap {
		return false
	}
	if h.server != nil {
		h.server.hosts--
		if h.server.hosts <= 0 && h.server.inFlight == 0 && len(h.server.parked) == 0 {
			delete(f.servers, h.server.addr)
		}
	}
	s := f.servers[addr]
	if s == nil {
		s = &server{addr: addr}
		f.servers[addr] = s
	}
	if f.serverPolicy.maxHosts > 0 && s.hosts >= f.serverPolicy.maxHosts {
		h.server, h.overServerCap = nil, true
		return true
	}
	s.hosts++
	h.server = s
	return false
}

// serverBlocks says whether a ready host's server keeps it from sending a
// request at now: at its limit of requests in flight (the host is parked
// until one ends), or within its delay (the host waits in the waiting
// heap until then).
func (f *frontier) serverBlocks(h *host, now time.Time) bool {
	s := h.server
	switch {
	case s == nil:
		return false
	case s.inFlight >= max(f.serverPolicy.conns, 1):
		h.parked = true
		s.parked = append(s.parked, h)
		f.parkedHosts++
		return true
	case s.nextAllowed.After(now):
		h.serverWait = s.nextAllowed
		heap.Push(&f.waiting, h)
		return true
	}
	return false
}

// takeServer counts a request of a host that was handed out.
func (f *frontier) takeServer(h *host) {
	if h.server != nil {
		h.server.inFlight++
		h.holds = h.server
	}
}

// releaseServer ends the host's request at its server; requested says a
// request was sent, which delays the server's next. Hosts parked on it
// are placed again.
func (f *frontier) releaseServer(h *host, now, notBefore time.Time, requested bool) {
	if s := h.holds; s != nil {
		s.inFlight--
		h.holds = nil
		parked := s.parked
		s.parked = nil
		for _, p := range parked {
			p.parked = false
			f.parkedHosts--
			f.placeHost(p)
		}
	}
	if s := h.server; s != nil && requested && notBefore.After(now) {
		gap := time.Duration(float64(notBefore.Sub(now)) * f.serverPolicy.delayShare)
		s.nextAllowed = later(s.nextAllowed, now.Add(gap))
	}
}
