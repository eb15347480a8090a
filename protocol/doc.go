// Package protocol implements the cocrawl share protocol (spec/share-protocol.md)
// over plain HTTP: streaming codecs for the share-control file robots.shr and
// for day files (<repository>/<day>.dat), the share-repository http.Handler
// that serves a webevents.Store, and the merge client that folds a peer's
// day files into a store. The same handler serves the store as ResourceSync
// (resourcesync.go: /.well-known/resourcesync, capability and change lists,
// spec section 13) and takes IndexNow submissions for a crawler (indexnow.go,
// spec section 14). Day files and change lists asked for with a prefix
// query are filtered to the records of one site or path (filter.go, spec
// section 7.7), read from the store's origin index as far as it runs and
// from the day log past it (filter.go, stream.go). lint.go is the
// robots.shr linter behind cocrawl shr lint.
//
// Codecs work on io.Reader and io.Writer and know nothing of transports; the
// handler and the client know nothing of libp2p. A peer decides whether the
// handler runs over TCP or over libp2p streams.
//
// Everything read from the network is hostile until checked. Decoders enforce
// Limits (line length, fields per record, records, bytes), report errors with
// line numbers, skip a bad record without losing the good ones around it, and
// count what they rejected in the metrics of metrics.go.
package protocol
