package peer

import "strings"

// Mode is one of the six behaviours of thesis section 4.1: a controller for
// rho and whether what the peer learns is published.
type Mode struct {
	Name       string
	Controller string // as rho.Parse reads it
	Share      bool
	About      string
}

// DefaultMode is the mode of a peer started without --mode or --rho.
const DefaultMode = "sharing-hybrid"

// Modes lists the behaviours in the thesis's order.
var Modes = []Mode{
	{"current", "fixed:1", false, "poll only, share nothing: today's crawler"},
	{"altruistic", "fixed:1", true, "poll only, share everything"},
	{"parasite", "fixed:0", false, "merge only, share nothing"},
	{"mirror", "fixed:0", true, "merge only, share everything"},
	{"hybrid", "rate", false, "poll and merge, share nothing"},
	{"sharing-hybrid", "rate", true, "poll and merge, share everything"},
}

// LookupMode finds a mode by name.
func LookupMode(name string) (Mode, bool) {
	for _, m := range Modes {
		if strings.EqualFold(m.Name, name) {
			return m, true
		}
	}
	return Mode{}, false
}

// ModeNames returns the names, for help and errors.
func ModeNames() string {
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = m.Name
	}
	return strings.Join(names, ", ")
}
