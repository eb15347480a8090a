package sim

import (
	"context"
	"testing"

	"github.com/cocrawl/cocrawl/peer/rho"
)

// liarSetup is n cooperating crawlers, checked or not, and one liar last.
func liarSetup(m Model, n int, checked bool) Setup {
	ctl := "seek:" + m.SeekPeriod().String()
	cs := homogeneous(n, ctl, true, "coop")
	for i := range cs {
		cs[i].Checked = checked
	}
	cs = append(cs, CrawlerSpec{Controller: ctl, Sharing: true, Group: "liar", Lies: 1})
	return Setup{Model: m, Crawlers: cs, Seed: 3}
}

// runWorld runs a setup and returns its world, for tests that look inside.
func runWorld(t *testing.T, s Setup) *world {
	t.Helper()
	ctrls := make([]rho.Controller, len(s.Crawlers))
	for i, c := range s.Crawlers {
		ctl, err := rho.Parse(c.Controller)
		if err != nil {
			t.Fatal(err)
		}
		ctrls[i] = ctl
	}
	w := newWorld(s, ctrls)
	if err := w.run(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	return w
}

// Without checks a liar's forged versions and false deletions outrank
// every poll and spread through the community; with them, every honest
// crawler distrusts it, re-polls what it gave, and holds nothing false.
func TestLiarIsDistrusted(t *testing.T) {
	m := Thesis().Scaled(0.005)
	open := runWorld(t, liarSetup(m, 4, false)).result()
	checked := runWorld(t, liarSetup(m, 4, true)).result()
	liar := len(checked.Crawlers) - 1
	if checked.Crawlers[liar].Lies == 0 {
		t.Fatal("the liar told no lies")
	}
	for i, c := range open.Crawlers[:liar] {
		if c.HeldFalse < 0.2 {
			t.Errorf("unchecked crawler %d holds %.3f of the web false; the lies did not take", i, c.HeldFalse)
		}
	}
	for i, c := range checked.Crawlers[:liar] {
		if c.Sources == nil || c.Sources[liar].DistrustAt < 0 {
			t.Errorf("checked crawler %d never distrusted the liar", i)
		}
		if c.HeldFalse > 0.01 || c.RefutedHonest != 0 || c.Repolls == 0 {
			t.Errorf("checked crawler %d: %.4f held false, %d honest refuted, %d re-polls", i, c.HeldFalse, c.RefutedHonest, c.Repolls)
		}
		for p, src := range c.Sources[:liar] {
			if src.DistrustAt >= 0 {
				t.Errorf("crawler %d distrusted honest crawler %d", i, p)
			}
		}
	}
	if o, c := open.GroupMean("coop", cover), checked.GroupMean("coop", cover); c < 2*o {
		t.Errorf("web freshness with checks %.3f, without %.3f: the checks should more than double it", c, o)
	}
}

func cover(c *CrawlerResult) float64 { return c.Coverage }

// Whatever lies, checks, re-polls and own polls over merged states did,
// each crawler's fresh and total entries still match its cache.
func TestLiarsKeepTheCountsExact(t *testing.T) {
	w := runWorld(t, liarSetup(Thesis().Scaled(0.002), 3, true))
	for i := range w.crawlers {
		c := &w.crawlers[i]
		fresh, entries := 0, 0
		for o := range w.created {
			v := w.versions[o*w.n+i]
			if v == verNone || v == verDeleted {
				continue
			}
			entries++
			bit := w.fresh[o*w.words+i/64]&(1<<(i%64)) != 0
			if now := v == w.cur[o] && !w.dead[o]; now != bit {
				t.Fatalf("crawler %d object %d: version %d, web %d dead %v, fresh bit %v", i, o, v, w.cur[o], w.dead[o], bit)
			} else if now {
				fresh++
			}
		}
		if fresh != c.fresh || entries != c.entries {
			t.Errorf("crawler %d counts %d fresh of %d, cache holds %d of %d", i, c.fresh, c.entries, fresh, entries)
		}
	}
}

// An honest community that checks pays a small share of its polls and
// blames no one.
func TestChecksInAnHonestCommunity(t *testing.T) {
	m := Thesis().Scaled(0.005)
	s := liarSetup(m, 4, true)
	s.Crawlers = s.Crawlers[:4]
	r := runWorld(t, s).result()
	for i, c := range r.Crawlers {
		if c.Refuted != 0 || c.Confirmed == 0 {
			t.Errorf("crawler %d: %d confirmed, %d refuted", i, c.Confirmed, c.Refuted)
		}
		if share := float64(c.CheckPolls) / float64(c.Polls); share > 0.15 {
			t.Errorf("crawler %d: checks are %.1f%% of its polls", i, 100*share)
		}
	}
}
