// Package testweb is a synthetic web on loopback for tests, benchmarks and
// the demo. Each host is a real HTTP server on 127.0.0.1 with its own port;
// pages link to pages of their own host and of others; a host's home page
// lists its live pages. Pages are created, updated and deleted by Poisson
// processes (Web.Run) or on demand (Create, Update, Delete), and answer with
// Last-Modified (on most hosts), ETag and conditional responses. Some hosts
// have a robots.txt with Disallow and Crawl-delay, one may have its
// robots.txt down, and host 0 may carry crawler traps. Every host keeps a
// request log, and Truth returns the state of every page at this instant.
// It talks to nothing but loopback.
//
// It serves webs of tens of millions of pages (`cocrawl measure scale`): a
// generated page is found by its path at once (/p/N.html is the host's
// page N), and its links are 8-byte references without pointers, written
// out when served, so that the web's collector has little to mark and
// what a request costs is mostly Go's HTTP server.
package testweb
