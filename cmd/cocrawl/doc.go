// Command cocrawl is one binary with subcommands (docs/architecture.md,
// "Command line").
// Flags, exit codes and messages for people live here only: each cmd_*.go
// file is one subcommand that parses its flags, calls the packages that do
// the work, and turns their errors into one line and an exit code
// (0 success, 1 failure or a negative answer, 2 usage error).
package main
