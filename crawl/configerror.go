package crawl

// ConfigError is a mistake in what the crawler was told (a setting, a
// seed, a pattern), as against a failure to run: cocrawl exits 2 for the
// first and 1 for the second.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }
