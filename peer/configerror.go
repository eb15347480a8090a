package peer

import "fmt"

// ConfigError is a mistake in what the peer was told (an address, a
// community name, a peer's URL, a reachability), as against a failure to
// start (a port taken, an identity key or a peer table that cannot be
// read): cocrawl exits 2 for the first and 1 for the second. A crawl
// setting's mistake is a crawl.ConfigError.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErrorf(format string, a ...any) error { return &ConfigError{fmt.Errorf(format, a...)} }
