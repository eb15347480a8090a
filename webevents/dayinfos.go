package webevents

// dayInfos keeps, from one write call to the next, the info of each day as
// the call's commits left it in the store, so a write batch reads none of
// them back.
//
// Only a call whose commits all succeeded fills it; a call that failed
// (some of its commits may have been applied, some not) and an expiry
// empty it, and the next call reads from the store again. It is used
// under BadgerStore.mu, as the writers are.
type dayInfos struct {
	days map[int64]DayInfo
}

func (c *dayInfos) day(day int64) (DayInfo, bool) {
	d, ok := c.days[day]
	return d, ok
}

func (c *dayInfos) clear() { c.days = nil }

// keep takes what a call's writer holds once all its commits succeeded,
// and forgets everything otherwise.
func (c *dayInfos) keep(w *writer, committed bool) {
	if !committed {
		c.clear()
		return
	}
	if c.days == nil {
		c.days = map[int64]DayInfo{}
	}
	for day, d := range w.days {
		c.days[day] = *d
	}
}
