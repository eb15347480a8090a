package publish

import "fmt"

// ConfigError is a mistake in what a publisher or pinger was told (a
// root that is not a folder, a base that is not a URL, a key of the
// wrong form), as against a failure to run (a key file that cannot be
// written): cocrawl exits 2 for the first and 1 for the second.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErrorf(format string, a ...any) error { return &ConfigError{fmt.Errorf(format, a...)} }
