package measure

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/cocrawl/cocrawl/crawl"
	"github.com/cocrawl/cocrawl/internal/testweb"
	"github.com/cocrawl/cocrawl/webevents"
)

// EventsConfig shapes the experiment on how true a crawler's web-events
// are on a web built like the real one (issue "web-events that are true"):
// its hosts serve pages of every testweb.PageKind and answer for deleted
// pages in every testweb.DeletionStyle, one host per pair.
type EventsConfig struct {
	PagesPerHost int           // default 50
	ChangeEvery  time.Duration // mean time between two changes of a page; default 1 min
	Delay        time.Duration // politeness delay; default 200 ms
	Run          time.Duration // default 3 min
	// DeleteShare is the share of each host's pages deleted during the run;
	// default 0.1.
	DeleteShare float64
	Seed        uint64
	Progress    io.Writer
}

func (c *EventsConfig) defaults() {
	if c.PagesPerHost <= 0 {
		c.PagesPerHost = 50
	}
	if c.ChangeEvery <= 0 {
		c.ChangeEvery = time.Minute
	}
	if c.Delay <= 0 {
		c.Delay = 200 * time.Millisecond
	}
	if c.Run <= 0 {
		c.Run = 3 * time.Minute
	}
	if c.DeleteShare <= 0 {
		c.DeleteShare = 0.1
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
}

// EventsKind is what the crawler reported of one page kind's updates.
type EventsKind struct {
	Kind     string
	Reported int // UPDATE events
	True     int // of them, of a page whose version had changed since the poll before
	Changes  int // changes seen: consecutive polls of a page that found two versions
	Detected int // of them, reported as an UPDATE
}

func (k EventsKind) Precision() float64 { return ratioOr1(k.True, k.Reported) }
func (k EventsKind) Recall() float64    { return ratioOr1(k.Detected, k.Changes) }

// EventsDeletion is what the crawler held of one deletion style's pages.
type EventsDeletion struct {
	Style string
	Seen  int // pages deleted during the run and polled after, having been polled live before
	Held  int // of them, held deleted at the end
}

// EventsReport is the experiment's outcome.
type EventsReport struct {
	Config       EventsConfig
	Kinds        []EventsKind
	Deletions    []EventsDeletion
	LiveDeleted  int // live pages held deleted at the end
	FalseCreates int // CREATE events of responses that were no page (a soft 404)
	Polls        int64
	DeletedBy    map[string]int64
	Hosts        int
	Start        time.Time
	Missed       []MissedChange // changes seen that no UPDATE reported
}

func ratioOr1(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// recordingStore keeps every event the crawler records, with a MemStore
// for its reads.
type recordingStore struct {
	*webevents.MemStore
	mu     sync.Mutex
	events []webevents.Event
}

func (s *recordingStore) Record(evs []webevents.Event) error {
	s.mu.Lock()
	s.events = append(s.events, evs...)
	s.mu.Unlock()
	return s.MemStore.Record(evs)
}

// eventsKinds are the page kinds Events measures, one per host and style.
var eventsKinds = []testweb.PageKind{testweb.Static, testweb.Dynamic, testweb.LastModifiedNow,
	testweb.WeakETagPerResponse, testweb.DynamicPlain, testweb.DynamicInline}

// Events runs one crawler, on cocrawl crawl's defaults but for the delay,
// over a realistic web, and judges each of its events against what the
// web served.
func Events(ctx context.Context, c EventsConfig) (*EventsReport, error) {
	c.defaults()
	kinds := eventsKinds
	styles := []testweb.DeletionStyle{testweb.NotFound, testweb.Soft404, testweb.RedirectHome}
	hosts := len(kinds) * len(styles)
	w, err := testweb.Start(testweb.Config{Hosts: hosts, PagesPerHost: c.PagesPerHost, Seed: c.Seed,
		UpdateRate: 1 / c.ChangeEvery.Seconds(), Kinds: kinds, Deletions: styles})
	if err != nil {
		return nil, err
	}
	defer w.Close()
	store := &recordingStore{MemStore: webevents.NewMemStore()}
	cr, err := crawl.New(crawl.Config{
		Seeds: w.Seeds(), CID: "measure.test:1 cocrawl/1.1", Workers: hosts * 2,
		MinDelay: c.Delay, DelaySet: true,
		Fetch:  crawl.FetchConfig{AllowPrivate: true, Timeout: 5 * time.Second},
		Logger: slog.New(slog.DiscardHandler),
	}, store, &crawl.MemFrontier{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, c.Run)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); w.Run(ctx) }()
	go func() { defer wg.Done(); cr.Run(ctx) }()
	// Deletions: spread over the run's middle, after the first visits.
	deletes := int(c.DeleteShare*float64(c.PagesPerHost)+0.5) * hosts
	tick := time.NewTicker(max(time.Millisecond, c.Run/2/time.Duration(max(deletes, 1))))
	next := 0
	start := time.Now()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
			if time.Since(start) < c.Run/4 || next >= deletes {
				continue
			}
			h := w.Hosts()[next%hosts]
			w.Delete(fmt.Sprintf("%s/p/%d.html", h.URL, 1+next/hosts))
			next++
			if c.Progress != nil && next%hosts == 0 {
				fmt.Fprintf(c.Progress, "%5.0fs  %d pages deleted, %d polls\n", time.Since(start).Seconds(), next, cr.Stats().Polls)
			}
		}
	}
	tick.Stop()
	wg.Wait()
	st := cr.Stats()
	return judgeEvents(c, w, store, st, start), nil
}

// look is one response a host's log shows, as the judge needs it.
type look struct {
	end     int64 // unix seconds
	version int   // of the page served; 0: not a page
	status  int
	ms      int64 // unix milliseconds
	// reread: the next look at the URL came within rereadWithin, so
	// this was the first of the two reads that learn a host's noise
	// (crawl/noise.go), and the crawler decided at the second.
	reread bool
}

// rereadWithin is below the crawler's shortest revisit interval (its
// default RevisitMin, 1 s): two looks closer are one read twice.
const rereadWithin = 900 * time.Millisecond

func newLook(at time.Time, version, status int) look {
	return look{end: at.Unix(), version: version, status: status, ms: at.UnixMilli()}
}

// markRereads marks the first of each two reads of a URL in a row.
func markRereads(looks map[string][]look) {
	for _, ls := range looks {
		for i := 0; i+1 < len(ls); i++ {
			ls[i].reread = ls[i+1].ms-ls[i].ms < rereadWithin.Milliseconds()
		}
	}
}

// updateJudge tells how true a crawler's UPDATE events were against the
// versions its looks found.
type updateJudge struct {
	looks   map[string][]look // by URL, in order
	kindOf  func(url string) string
	kinds   map[string]*EventsKind
	order   []string
	updated map[string]map[int]bool // URL -> looks reported as updates
	// falseCreates counts CREATE events of looks that served no page.
	falseCreates int
	// missed are the changes seen that no UPDATE reported, for a report
	// to name: in the order seen, once finish has run.
	missed []MissedChange
}

// MissedChange is a change a look saw that no UPDATE reported: where a
// failed run starts looking.
type MissedChange struct {
	URL      string
	At       time.Time // the look that saw it ended
	From, To int       // versions
	Reread   bool      // the look was the second of two reads
}

func newUpdateJudge(looks map[string][]look, kindOf func(string) string) *updateJudge {
	markRereads(looks)
	return &updateJudge{looks: looks, kindOf: kindOf, kinds: map[string]*EventsKind{}, updated: map[string]map[int]bool{}}
}

func (j *updateJudge) kind(u string) *EventsKind {
	name := j.kindOf(u)
	k := j.kinds[name]
	if k == nil {
		k = &EventsKind{Kind: name}
		j.kinds[name] = k
		j.order = append(j.order, name)
	}
	return k
}

// pollOf is the look an event came from: the last look at its URL in its
// second that served a page (or any, for a deletion), else in the second
// before (the web logs a response when its handler returns, the crawler
// dates it when it has read it: on a busy machine, a second boundary can
// fall between); -1 if none. Two reads in a row count as one look, the
// second (a poll's second can be the first read's).
func (j *updateJudge) pollOf(e webevents.Event) int {
	if i := j.pollIn(e, e.LPD); i >= 0 {
		return i
	}
	return j.pollIn(e, e.LPD-1)
}

// pollIn is pollOf's search among the looks that ended in second sec.
func (j *updateJudge) pollIn(e webevents.Event, sec int64) int {
	ls := j.looks[e.URL]
	last := sort.Search(len(ls), func(i int) bool { return ls[i].end > sec }) - 1
	fits := func(k int) bool { return ls[k].version > 0 || e.Stat == webevents.Delete }
	// A look of its own first, then the second of two reads, then the
	// first (the poll after it was another: a spot-check, a sample).
	for pass := 0; pass < 3; pass++ {
		for i := last; i >= 0 && ls[i].end == sec; i-- {
			k := i
			switch {
			case pass == 0 && ls[i].reread, pass > 0 && !ls[i].reread:
				continue
			case pass == 1:
				for k+1 < len(ls) && ls[k].reread {
					k++
				}
			}
			if fits(k) {
				return k
			}
		}
	}
	return -1
}

// prevPage is the look before i that served a page and was not a first
// read of two, or -1.
func prevPage(ls []look, i int) int {
	for i--; i >= 0 && (ls[i].version == 0 || ls[i].reread); i-- {
	}
	return i
}

// event judges one event of a URL the judge follows.
func (j *updateJudge) event(e webevents.Event) {
	i := j.pollOf(e)
	switch e.Stat {
	case webevents.Update:
		k := j.kind(e.URL)
		k.Reported++
		if i < 0 {
			return
		}
		ls := j.looks[e.URL]
		if p := prevPage(ls, i); p >= 0 && ls[p].version != ls[i].version {
			k.True++
		}
		if j.updated[e.URL] == nil {
			j.updated[e.URL] = map[int]bool{}
		}
		j.updated[e.URL][i] = true
	case webevents.Create:
		if i < 0 || j.looks[e.URL][i].version == 0 {
			j.falseCreates++
		}
	}
}

// finish counts the changes the looks saw and returns the kinds.
func (j *updateJudge) finish() []EventsKind {
	for u, ls := range j.looks {
		k := j.kind(u)
		for i := range ls {
			if ls[i].version == 0 || ls[i].reread {
				continue
			}
			if p := prevPage(ls, i); p >= 0 && ls[p].version != ls[i].version {
				k.Changes++
				if j.updated[u][i] {
					k.Detected++
				} else {
					j.missed = append(j.missed, MissedChange{URL: u, At: time.UnixMilli(ls[i].ms),
						From: ls[p].version, To: ls[i].version, Reread: i > 0 && ls[i-1].reread})
				}
			}
		}
	}
	slices.SortFunc(j.missed, func(a, b MissedChange) int { return a.At.Compare(b.At) })
	out := make([]EventsKind, 0, len(j.order))
	for _, name := range j.order {
		out = append(out, *j.kinds[name])
	}
	return out
}

// judgeEvents compares the events with the hosts' logs of what they
// served.
func judgeEvents(c EventsConfig, w *testweb.Web, store *recordingStore, st crawl.Stats, start time.Time) *EventsReport {
	rep := &EventsReport{Config: c, Polls: st.Polls, DeletedBy: st.DeletedBy, Hosts: len(w.Hosts()), Start: start}
	looks := map[string][]look{}
	for _, h := range w.Hosts() {
		for _, r := range h.Log() {
			if !strings.HasPrefix(r.Path, "/p/") {
				continue
			}
			u := h.URL + r.Path
			looks[u] = append(looks[u], newLook(r.End, r.Version, r.Status))
		}
	}
	j := newUpdateJudge(looks, func(u string) string { return w.HostOf(u).Kind().String() })
	for _, pk := range eventsKinds {
		for _, h := range w.Hosts() {
			if h.Kind() == pk {
				j.kind(h.URL + "/p/0.html") // the table's order
				break
			}
		}
	}
	for _, e := range store.events {
		u, err := url.Parse(e.URL)
		if err != nil || !strings.HasPrefix(u.Path, "/p/") {
			continue
		}
		j.event(e)
	}
	rep.Kinds, rep.FalseCreates = j.finish(), j.falseCreates
	rep.Missed = j.missed
	byStyle := map[testweb.DeletionStyle]*EventsDeletion{}
	for u, ps := range w.Truth() {
		if !strings.Contains(u, "/p/") {
			continue
		}
		e, ok, _ := store.Get(u)
		held := ok && e.Stat == webevents.Delete
		if ps.Live {
			if held {
				rep.LiveDeleted++
			}
			continue
		}
		if !seenLiveThenGone(looks[u], ps.LMD) {
			continue
		}
		s := w.HostOf(u).Deletion()
		d := byStyle[s]
		if d == nil {
			d = &EventsDeletion{Style: s.String()}
			byStyle[s] = d
		}
		d.Seen++
		if held {
			d.Held++
		}
	}
	for _, s := range []testweb.DeletionStyle{testweb.NotFound, testweb.Soft404, testweb.RedirectHome} {
		if d := byStyle[s]; d != nil {
			rep.Deletions = append(rep.Deletions, *d)
		}
	}
	return rep
}

// seenLiveThenGone says whether the looks found the page live before its
// deletion at gone (unix seconds) and looked again after.
func seenLiveThenGone(ls []look, gone int64) bool {
	before, after := false, false
	for _, l := range ls {
		if l.end < gone && l.version > 0 {
			before = true
		}
		if l.end > gone {
			after = true
		}
	}
	return before && after
}

// Print writes the report's tables.
func (r *EventsReport) Print(out io.Writer) {
	fmt.Fprintf(out, "one crawler (cocrawl crawl's defaults, --delay %v) for %v on %d hosts x %d pages, each page changing every %v on average (a third of its text rewritten), %.0f%% of them deleted during the run; %d polls\n\n",
		r.Config.Delay, r.Config.Run, r.Hosts, r.Config.PagesPerHost, r.Config.ChangeEvery, 100*r.Config.DeleteShare, r.Polls)
	tw := tabwriter.NewWriter(out, 2, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "page kind\tupdates reported\ttrue\tchanges seen\tdetected\tprecision\trecall\t")
	for _, k := range r.Kinds {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t\n", k.Kind, k.Reported, k.True, k.Changes, k.Detected, k.Precision(), k.Recall())
	}
	tw.Flush()
	fmt.Fprintln(out)
	tw = tabwriter.NewWriter(out, 2, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "deletion style\tdeleted, seen after\theld deleted\tshare\t")
	for _, d := range r.Deletions {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%.3f\t\n", d.Style, d.Seen, d.Held, ratioOr1(d.Held, d.Seen))
	}
	tw.Flush()
	fmt.Fprintf(out, "\nlive pages held deleted: %d; creations of pages that were not there: %d; deletions decided by %v\n", r.LiveDeleted, r.FalseCreates, r.DeletedBy)
	printMissed(out, r.Missed, r.Start)
}

// printMissed names the changes no UPDATE reported (the judge's finish
// puts them in the order seen).
func printMissed(out io.Writer, missed []MissedChange, start time.Time) {
	for _, m := range missed {
		how := ""
		if m.Reread {
			how = ", the second of two reads"
		}
		fmt.Fprintf(out, "missed: %s at %.1f s into the run (version %d to %d%s)\n", m.URL, m.At.Sub(start).Seconds(), m.From, m.To, how)
	}
}
