package webevents

// dayInfos keeps, from one write call to the next, the info of each day
// and of each origin's part of a day as the call's commits left them in
// the store, so a write batch reads none of them back. Each batch of a
// crawl touches most of its origins (a record each), and at 15 million
// URLs those reads were 4% of a peer's CPU (writer.originInfo: a point
// read of the tree, its levels searched down to the key's,
// docs/performance.md).
//
// Only a call whose commits all succeeded fills it; a call that failed
// (some of its commits may have been applied, some not) and an expiry
// empty it, and the next call reads from the store again. It is used
// under BadgerStore.mu, as the writers are.
type dayInfos struct {
	days    map[int64]cachedDay
	origins map[originDay]DayInfo
}

type cachedDay struct {
	info    DayInfo
	indexed bool // its log is indexed by origin (writer.indexed)
}

// maxCachedOrigins bounds the origins kept (about 150 bytes each): past
// it the cache starts again empty, and a call reads what it needs, as
// every call did before.
const maxCachedOrigins = 1 << 17

func (c *dayInfos) day(day int64) (cachedDay, bool) {
	d, ok := c.days[day]
	return d, ok
}

func (c *dayInfos) origin(k originDay) (DayInfo, bool) {
	d, ok := c.origins[k]
	return d, ok
}

func (c *dayInfos) clear() {
	c.days, c.origins = nil, nil
}

// keep takes what a call's writer holds once all its commits succeeded,
// and forgets everything otherwise.
func (c *dayInfos) keep(w *writer, committed bool) {
	if !committed {
		c.clear()
		return
	}
	if len(c.origins)+len(w.origins) > maxCachedOrigins {
		c.clear()
	}
	if c.days == nil {
		c.days, c.origins = map[int64]cachedDay{}, map[originDay]DayInfo{}
	}
	for day, d := range w.days {
		c.days[day] = cachedDay{info: *d, indexed: w.indexed[day]}
	}
	for k, d := range w.origins {
		c.origins[k] = *d
	}
}
