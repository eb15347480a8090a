package peer

import (
	"errors"
	"fmt"
	"strings"

	"github.com/cocrawl/cocrawl/peer/rho"
)

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

// Behaviour is a resolved mode: its name, controller and sharing.
type Behaviour struct {
	Name       string
	Controller rho.Controller
	Share      bool
}

// ErrUnknownMode: a mode name that is not one of Modes.
var ErrUnknownMode = errors.New("peer: unknown mode")

// ErrModeConflict: a mode and an explicit controller or sharing setting
// name different behaviours.
var ErrModeConflict = errors.New("peer: mode contradicts the controller or sharing given")

// ResolveMode turns a mode name, a controller spec (rho.Parse) and a
// sharing setting into a behaviour. A mode names a preset; rhoSpec and
// share refine it but may not contradict it. Empty mode means DefaultMode,
// empty rhoSpec the mode's controller, nil share the mode's sharing.
func ResolveMode(mode, rhoSpec string, share *bool) (Behaviour, error) {
	name := mode
	if name == "" {
		name = DefaultMode
	}
	m, ok := LookupMode(name)
	if !ok {
		return Behaviour{}, fmt.Errorf("%w %q: use one of %s", ErrUnknownMode, mode, ModeNames())
	}
	spec := m.Controller
	if rhoSpec != "" {
		spec = rhoSpec
	}
	ctl, err := rho.Parse(spec)
	if err != nil {
		return Behaviour{}, err
	}
	b := Behaviour{Controller: ctl, Share: m.Share}
	if share != nil {
		b.Share = *share
	}
	b.Name = ModeOf(ctl, b.Share)
	if mode != "" && b.Name != m.Name {
		return Behaviour{}, fmt.Errorf("%w: controller %s with sharing %v is %s, not %s", ErrModeConflict, ctl.Name(), b.Share, b.Name, m.Name)
	}
	return b, nil
}

// ModeOf names the thesis's behaviour that a controller and sharing make:
// fixed rho 1 polls only, fixed rho 0 merges only, anything else is a
// hybrid.
func ModeOf(ctl rho.Controller, share bool) string {
	poll := "hybrid"
	if f, ok := ctl.(rho.Fixed); ok && (f == 0 || f == 1) {
		poll = map[rho.Fixed]string{0: "merge", 1: "poll"}[f]
	}
	switch {
	case poll == "poll" && !share:
		return "current"
	case poll == "poll":
		return "altruistic"
	case poll == "merge" && !share:
		return "parasite"
	case poll == "merge":
		return "mirror"
	case !share:
		return "hybrid"
	}
	return "sharing-hybrid"
}
