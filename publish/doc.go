// Package publish is a site owner's publisher of web-events: the "web
// server module" of McLearn's thesis (section 7.3.3), the crawler-friendly
// web server that crawlers merge instead of polling.
//
// A Publisher watches a document root with fsnotify (inotify on Linux) and
// records a web-event for each file of the site that is created, updated or
// deleted: the file's URL under the site's base URL, its modification time
// as lmd (what a web server sends as Last-Modified, so a crawler's
// spot-check poll confirms it), its size and SHA-256 digest. The events go
// into a webevents store, which a protocol.Server shares as day files and
// ResourceSync change lists; `cocrawl publish` wires the two and names the
// site as the share-control file's special prefix, so peers that merge the
// publisher leave the site's polls to it (spec section 12).
//
// What the watcher may miss is caught by rescans: at start (against what
// the store already holds, so changes made while the publisher was down
// are published too), after an inotify queue overflow, every Rescan, and
// every minute while a directory could not be watched (the kernel's watch
// limit). A file is published once it has been quiet for Settle, so a file
// written in several steps gives one event.
//
// Day files carry changes, and a peer's first merge reaches back a week, so
// a publisher also records each unchanged file again as a confirmation once
// per ConfirmCycle (a week by default): a new peer then learns the whole
// site. At least one file is confirmed an hour, because a peer honours a
// special prefix only while it merges records of the publisher's own
// observations of the host (within 24 hours).
//
// With IndexNow endpoints given, each change is also pushed to them in the
// IndexNow protocol's JSON form, batched, with the key file the publisher
// writes into the root so the receivers can verify it.
package publish
