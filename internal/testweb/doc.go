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
package testweb
