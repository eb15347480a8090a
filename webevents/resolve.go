package webevents

// Action says what a store does with an incoming event after resolution.
type Action uint8

const (
	// Ignore: the incoming event tells nothing the current state does not.
	Ignore Action = iota
	// Accept: record Decision.Result as the current state and append it to
	// the log of its day.
	Accept
	// Restate: replace the current state with Decision.Result without
	// logging it; used when a merge only reclassifies what is already held.
	Restate
)

func (a Action) String() string {
	switch a {
	case Ignore:
		return "ignore"
	case Accept:
		return "accept"
	case Restate:
		return "restate"
	}
	return "action?"
}

// Decision is the outcome of Resolve.
type Decision struct {
	Action Action
	Result Event // meaningful for Accept and Restate
	// Violation reports that the two events break the lifecycle order
	// CREATE < UPDATE < DELETE; the spec says to schedule a poll of the URL.
	Violation bool
	// Rule names the rule that decided, for tests, logs and metrics.
	Rule string
}

// Resolve applies the event resolution rules of the share protocol (thesis
// section 3.3.1, written out in spec/share-protocol.md section 5) to an
// incoming event in, given the current state cur of the same URL (nil when
// the URL is unknown). Recency is judged by the last-modified date. The
// result keeps the incoming record's cid: the crawler that first observed
// the event, not the peer it was merged from.
//
// One rule comes before the thesis's: a merged record (From set) never
// overrides a state this peer's own poll (From empty) saw at the same time
// or later. A peer's own look is the truth it can check; without this rule
// a record with a forged lmd could pin a false state that later polls,
// which judge by lmd, could never correct.
func Resolve(cur *Event, in Event) Decision {
	if cur == nil {
		return Decision{Action: Accept, Result: in, Rule: "new-url"}
	}
	if cur.From == "" && in.From != "" && in.LPD <= cur.LPD {
		return ignore("own-poll-newer")
	}
	m := *cur
	switch {
	case m.Stat == Create && in.Stat == Create:
		// Two CREATEs: the earlier is the creation, the later was an update.
		switch {
		case in.LMD > m.LMD:
			return accept(in, Update, "create-create-later")
		case in.LMD < m.LMD:
			m.Stat = Update
			return Decision{Action: Restate, Result: m, Rule: "create-create-earlier"}
		}
		return ignore("create-create-same")
	case m.Stat == Update && in.Stat == Update:
		if in.LMD > m.LMD {
			return accept(in, Update, "update-update-later")
		}
		return ignore("update-update-not-later")
	case m.Stat == Delete && in.Stat == Delete:
		// Two DELETEs: the earlier detection is the more accurate date.
		if in.LMD < m.LMD {
			return accept(in, Delete, "delete-delete-earlier")
		}
		return ignore("delete-delete-not-earlier")
	case m.Stat == Update && in.Stat == Create:
		// A later CREATE over an UPDATE was a missed update.
		if in.LMD > m.LMD {
			return accept(in, Update, "update-create-later")
		}
		return ignore("update-create-not-later")
	case m.Stat == Create && in.Stat == Update:
		switch {
		case in.LMD > m.LMD:
			return accept(in, Update, "create-update-later")
		case in.LMD < m.LMD:
			// An UPDATE older than the CREATE breaks the order.
			return violation(Ignore, Event{}, "create-update-earlier")
		}
		return ignore("create-update-same")
	case m.Stat != Delete && in.Stat == Delete:
		if in.LMD >= m.LMD {
			return accept(in, Delete, "live-delete")
		}
		// Deleted before a version we hold was modified: something was missed.
		return violation(Ignore, Event{}, "live-delete-earlier")
	case m.Stat == Delete && in.Stat == Create:
		if in.LMD > m.LMD {
			return accept(in, Create, "delete-create-recreated")
		}
		return ignore("delete-create-not-later")
	default: // m.Stat == Delete && in.Stat == Update
		if in.LMD > m.LMD {
			// An UPDATE after a DELETE with no CREATE between: keep the newer
			// information, but the order is broken.
			d := accept(in, Update, "delete-update-later")
			d.Violation = true
			return d
		}
		return ignore("delete-update-not-later")
	}
}

func accept(e Event, s Stat, rule string) Decision {
	e.Stat = s
	return Decision{Action: Accept, Result: e, Rule: rule}
}

func ignore(rule string) Decision { return Decision{Action: Ignore, Rule: rule} }

func violation(a Action, e Event, rule string) Decision {
	return Decision{Action: a, Result: e, Violation: true, Rule: rule}
}
