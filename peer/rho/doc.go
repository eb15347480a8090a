// Package rho holds the controllers that set the poll/merge ratio rho of a
// cooperating crawler (thesis algorithm 4.1): with probability rho the next
// network operation polls the web, otherwise it merges from a peer.
//
// A Controller is told the Outcome of every operation (was it a merge, how
// many web-events it gained, how much network time it took) and answers
// Rho. The live peer (package peer) and the simulator (package sim) drive
// the same controllers through that interface; the package imports nothing
// else of the project, and controllers never read a clock: the time they
// need comes in Outcome.Cost and Outcome.End, so simulated time works as
// well as real time.
//
// Four controllers are provided:
//
//   - Fixed: a constant rho; rho 1 with sharing off is today's crawler.
//   - BangBang: the thesis's section 6.3.1. Over the most recent 30% of the
//     operations it compares events per poll (p_r) with events per merge
//     (m_r) and sets rho to 0.90 when p_r > m_r, to 0.10 when m_r > p_r.
//   - Rate: ours. The thesis names two weaknesses of bang-bang: a merge that
//     moves many records costs more network time than a poll, so events per
//     operation flatters merging ("a vicious circle in which m_r is high but
//     the overall freshness is still low"); and a window that is a share of
//     all history reacts ever more slowly as a peer ages. Rate compares
//     events per second of network time, over exponentially decaying
//     windows with a fixed half-life, and moves rho in small steps only
//     when one side beats the other by a margin (hysteresis), so it settles
//     instead of flapping between two extremes.
//   - Seek: ours, and the simulator's best (sim/README.md). Rate and
//     BangBang compare what one peer sees, and every rule of that kind
//     drifts towards merging: merging more helps the peer at once, while
//     its cost (fewer polls, so fewer discoveries for everyone) arrives
//     late and falls on the community. Seek probes more and fewer merges
//     in step with every other Seek peer, by a clock they share
//     (Outcome.End), so what it measures is the community's answer; it
//     measures its cache's freshness by the share of polls that find no
//     change, pools its probes and its peers' published counts (Report),
//     fits out any drift over time, and moves on the scale of 1-rho only
//     on a difference clear of the noise.
//
// Controllers are not safe for concurrent use; the live peer serialises
// calls with a mutex, the simulator runs each crawler on one goroutine.
package rho
