// Package crawl is the polling crawler: a peer's own eyes on the web.
//
// Data flows like this. Seeds and discovered links are normalised
// (Normalize) and admitted by scope and trap rules into the frontier, which
// keeps per-host queues ordered by due time and two heaps of hosts: waiting,
// by the time a host may next be asked, and ready, larger sites first. A
// worker takes a ready host (one request per host at a time), fetches its
// robots.txt when due (RFC 9309 via github.com/jimsmart/grobotstxt), checks
// the URL against it, and polls with a conditional GET (HEAD for non-HTML
// revisits). Detect turns the response into a CREATE, UPDATE or DELETE
// web-event with this peer's cid; ExtractLinks finds the next URLs. The
// host's delay (the larger of the floor, Crawl-delay and a multiple of the
// download time, plus backoff on 429 and 5xx) starts when the download
// ends. Events and frontier states are written in batches, so a
// restarted crawler resumes from its stored frontier.
//
// Which URL a host is asked for next (frontier.go, schedule.go): a URL
// never looked at waits in a heap ordered by the pages seen linking to it
// (IB'), the others by due time; due revisits go first, but first visits
// keep a share (Config.Explore). A URL's revisit interval comes from its
// change-rate estimate (package crawl/revisit) and a multiplier fitted so
// that the host's URLs spend its politeness budget, and the crawler's
// URLs the budget its caller gives (Config.RequestRate), by the freshness
// optimum of Cho and Garcia-Molina (Config.Revisit: RevisitOptimal; the
// first plan's halve-or-grow rule and uniform revisits remain as options).
// Hosts' sitemaps (signals.go, package crawl/sitemap) add URLs and lastmod
// claims, which the polls they cause judge; a proven host's sitemap read
// stands in for the polls of the pages it says are unchanged.
//
// Knowledge from outside its own polls and links (records merged from
// peers, sitemaps, feeds) enters through one door, Crawler.Hint: a URL in
// scope joins the frontier, someone else's poll counts as a visit, a
// reported change makes the URL due. Robots.txt, politeness and scope stay
// in charge. Recheck asks for one unconditional poll that hints cannot put
// off (a spot-check of a peer's claim). With Config.Spread each crawler
// polls in its own order, so peers that hint each other interleave; with
// Config.Confirm a poll that saw no change is recorded as a confirmation,
// which peers count as a visit. order.go holds the order and the first
// plan's interval rule. The files follow the concerns: config.go,
// scope.go (scope and trap rules), politeness.go, fetch.go, robots.go,
// detect.go, links.go, frontier.go, schedule.go, estimate.go, hint.go,
// signals.go, persist.go, errorkinds.go; crawler.go holds the life cycle
// and the poll.
//
// The crawler never records events for robots.txt, robots.shr, or URLs
// under a prefix given to ExcludePrefixes (peers' share repositories).
package crawl
