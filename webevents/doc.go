// Package webevents holds the data model of cocrawl: the web-event (a URL
// created, updated or deleted, as a crawler observed it), the day arithmetic
// that names the share repository's day files, the event resolution rules of
// the share protocol, and the Store that keeps a peer's view of the web.
//
// Data flows in two ways. A peer's own polls are written with Store.Record:
// the crawler has already decided the event. Events merged from other peers
// go through Store.Merge, which resolves each one against the current state
// with Resolve and commits the outcome together with the merge cursor of that
// peer, so a cursor is never ahead of the events it covers.
//
// Every recorded event is appended to the log of the day of its last-polled
// date (lpd). Log entries are stored in blocks keyed by the byte offset of
// their first entry in the day file the protocol serves, so a share server
// can answer "Range: bytes=N-" by seeking to the block that holds byte N.
// For that reason the canonical text of one record (AppendRecord) lives here
// and not in package protocol, which owns the streaming codecs. Each record
// is also appended to the log of its origin's day (a day file filtered to
// one site); the Badger store writes those behind the day log, in passes
// that gather some seconds of commits per origin (badger_index.go), and a
// read of an origin's day waits for the pass that brings it up to date. A
// reader that comes often (the share server's filtered files and live
// streams) reads the index as far as it runs instead
// (ReadOriginDayIndexed), and the day log past it.
//
// Two stores implement the contract: Badger (OpenBadger) for real peers and an
// in-memory one (NewMemStore) for tests. Both pass the conformance suite in
// webevents/storetest. (The simulator keeps its own compact tables and uses
// neither.)
//
// The Badger store owns a peer's whole database: keyspace.go declares every
// key prefix, its own and those of the tables it lends to other packages
// (Table: the frontier, the peer table), which never see the database
// handle.
package webevents
