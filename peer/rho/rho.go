package rho

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Outcome is one network operation as a controller sees it.
type Outcome struct {
	Merge  bool          // a merge from a peer; false: a poll of the web
	Events int           // web-events it gained: new to this crawler
	Cost   time.Duration // network time it took
	// End is when it ended, on a clock the community shares (the wall
	// clock; the simulator's clock); zero if unknown. Seek probes in step
	// with its peers by it.
	End time.Time
	// From names the peer merged from (merges only), and Report is what
	// that peer published about its probes when the merge began (zero
	// Period: nothing). Seek pools its peers' reports with its own counts.
	From   string
	Report Report
}

// Controller decides rho from the outcomes of past operations.
type Controller interface {
	// Rho is the probability that the next operation is a poll, in [0,1].
	Rho() float64
	// Observe records the outcome of one operation.
	Observe(Outcome)
	// Name describes the controller and its settings, as Parse reads it.
	Name() string
}

// ErrBadSpec is wrapped by Parse errors.
var ErrBadSpec = errors.New("rho: bad controller")

// Parse builds a controller from its name: "fixed:R" or a bare number R in
// [0,1], "bangbang", "rate", "seek" or "seek:PERIOD". Names are case-insensitive.
func Parse(spec string) (Controller, error) {
	s := strings.ToLower(strings.TrimSpace(spec))
	name, arg, hasArg := strings.Cut(s, ":")
	switch name {
	case "bangbang", "bang-bang":
		if hasArg {
			return nil, fmt.Errorf("%w: %q takes no argument", ErrBadSpec, spec)
		}
		return NewBangBang(), nil
	case "rate":
		if hasArg {
			return nil, fmt.Errorf("%w: %q takes no argument", ErrBadSpec, spec)
		}
		return NewRate(), nil
	case "seek":
		s := &Seek{}
		if hasArg {
			d, err := time.ParseDuration(arg)
			if err != nil || d <= 0 {
				return nil, fmt.Errorf("%w: %q: the probe period must be a positive duration, as in seek:6h", ErrBadSpec, spec)
			}
			s.Period = d
		}
		s.init()
		return s, nil
	case "fixed":
		if !hasArg {
			return nil, fmt.Errorf("%w: %q needs a value, as in fixed:0.5", ErrBadSpec, spec)
		}
		return parseFixed(arg, spec)
	}
	if !hasArg {
		if _, err := strconv.ParseFloat(name, 64); err == nil {
			return parseFixed(name, spec)
		}
	}
	return nil, fmt.Errorf("%w: %q is not fixed:R, a number, bangbang, rate or seek", ErrBadSpec, spec)
}

func parseFixed(v, spec string) (Controller, error) {
	r, err := strconv.ParseFloat(v, 64)
	if err != nil || r < 0 || r > 1 || r != r {
		return nil, fmt.Errorf("%w: %q: rho must be a number in [0,1]", ErrBadSpec, spec)
	}
	return Fixed(r), nil
}

// Fixed is a constant rho.
type Fixed float64

func (f Fixed) Rho() float64    { return float64(f) }
func (f Fixed) Observe(Outcome) {}
func (f Fixed) Name() string    { return "fixed:" + strconv.FormatFloat(float64(f), 'g', -1, 64) }
func (f Fixed) String() string  { return f.Name() }
