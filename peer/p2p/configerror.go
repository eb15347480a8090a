package p2p

import "fmt"

// ConfigError is a mistake in what the node was told (a community name,
// a bootstrap or relay address), as against a failure to start (a port
// taken, an identity key that cannot be read).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErrorf(format string, a ...any) error { return &ConfigError{fmt.Errorf(format, a...)} }
