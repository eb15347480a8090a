package trust

// Policy decides from a source's checked claims. Zero fields take the
// defaults named.
type Policy struct {
	// Checks is how many records of each merge are re-polled; default 4,
	// negative for none (every peer's word is then taken as truth).
	Checks int
	// DistrustAfter is how many refuted claims a source may have before it
	// can be distrusted; default 3.
	DistrustAfter int
	// MaxFalse is the share of false claims, estimated as the mean of a
	// Beta(refuted+1, confirmed+1), above which a source with enough
	// refutations is distrusted; default 0.1.
	MaxFalse float64
	// Vouch is how many confirmed claims a source needs before a peer
	// publishes its records onward; default 8. Until then, and for ever
	// once distrusted, they are withheld.
	Vouch int
	// Budget is the share of a peer's polls that the checks of sources it
	// vouches for may take; default 0.05. A merge from such a source that
	// ends with the checks over it is not checked. Without it the cost
	// grows with the merges a poll buys: a fifth of all polls for 32
	// crawlers in the simulator.
	Budget float64
}

// WithDefaults returns p with its zero fields set to the defaults.
func (p Policy) WithDefaults() Policy {
	if p.Checks == 0 {
		p.Checks = 4
	}
	if p.DistrustAfter <= 0 {
		p.DistrustAfter = 3
	}
	if p.MaxFalse <= 0 {
		p.MaxFalse = 0.1
	}
	if p.Vouch <= 0 {
		p.Vouch = 8
	}
	if p.Budget <= 0 {
		p.Budget = 0.05
	}
	return p
}

// FalseShare is the Beta reputation's estimate of the share of a source's
// claims that are false.
func FalseShare(confirmed, refuted int64) float64 {
	return float64(refuted+1) / float64(confirmed+refuted+2)
}

// Distrusts says whether a source's checks pass the bound.
func (p Policy) Distrusts(confirmed, refuted int64) bool {
	return refuted >= int64(p.DistrustAfter) && FalseShare(confirmed, refuted) > p.MaxFalse
}

// Vouches says whether a source not distrusted has been confirmed often
// enough, and refuted rarely enough, for its records to be published
// onward: Vouch confirmations, and a share of refuted claims under half
// of MaxFalse. The share is the observed one, not the Beta mean, whose
// prior alone would ask for 19 confirmations instead of Vouch.
func (p Policy) Vouches(confirmed, refuted int64) bool {
	return confirmed >= int64(p.Vouch) && float64(refuted) < p.MaxFalse/2*float64(confirmed+refuted)
}

// Sample is how many records of one merge from a source are checked,
// given the checks and the polls (checks included) made so far: Checks
// while the source is not vouched for, whatever the budget, so a liar
// (never vouched for) is checked at every merge until it is caught; then
// one (a source that turns liar after earning trust is still caught), and
// none while the checks are over Budget of the polls; none when checks
// are off.
func (p Policy) Sample(vouched bool, checks, polls int64) int {
	switch {
	case p.Checks <= 0:
		return 0
	case !vouched:
		return p.Checks
	case float64(checks) >= p.Budget*float64(polls):
		return 0
	}
	return 1
}
