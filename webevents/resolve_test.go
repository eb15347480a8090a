package webevents

import "testing"

func ev(s Stat, lmd int64, cid string) Event {
	return Event{URL: "http://a.example/x", Size: 10, LMD: lmd, LPD: lmd + 5, CID: cid, Stat: s}
}

func TestResolve(t *testing.T) {
	const mine, theirs = "m.example:1 M/1", "s.example:1 S/1"
	tests := []struct {
		name      string
		cur       *Event
		in        Event
		action    Action
		stat      Stat  // result stat for Accept/Restate
		lmd       int64 // result lmd for Accept/Restate
		cid       string
		violation bool
	}{
		{"unknown url is mirrored", nil, ev(Update, 1000, theirs), Accept, Update, 1000, theirs, false},
		{"unknown url keeps a third crawler's cid", nil, ev(Create, 1000, "t:1 T"), Accept, Create, 1000, "t:1 T", false},
		{"create/create: later create is an update", ptr(ev(Create, 1000, mine)), ev(Create, 2000, theirs), Accept, Update, 2000, theirs, false},
		{"create/create: earlier create reclassifies mine", ptr(ev(Create, 2000, mine)), ev(Create, 1000, theirs), Restate, Update, 2000, mine, false},
		{"create/create: same", ptr(ev(Create, 1000, mine)), ev(Create, 1000, theirs), Ignore, 0, 0, "", false},
		{"update/update: most recent wins", ptr(ev(Update, 1000, mine)), ev(Update, 2000, theirs), Accept, Update, 2000, theirs, false},
		{"update/update: older discarded", ptr(ev(Update, 2000, mine)), ev(Update, 1000, theirs), Ignore, 0, 0, "", false},
		{"update/update: same", ptr(ev(Update, 2000, mine)), ev(Update, 2000, theirs), Ignore, 0, 0, "", false},
		{"delete/delete: earlier is more accurate", ptr(ev(Delete, 2000, mine)), ev(Delete, 1000, theirs), Accept, Delete, 1000, theirs, false},
		{"delete/delete: later discarded", ptr(ev(Delete, 1000, mine)), ev(Delete, 2000, theirs), Ignore, 0, 0, "", false},
		{"update/create later: merged as update", ptr(ev(Update, 1000, mine)), ev(Create, 2000, theirs), Accept, Update, 2000, theirs, false},
		{"update/create earlier: older creation", ptr(ev(Update, 2000, mine)), ev(Create, 1000, theirs), Ignore, 0, 0, "", false},
		{"create/update later: normal order", ptr(ev(Create, 1000, mine)), ev(Update, 2000, theirs), Accept, Update, 2000, theirs, false},
		{"create/update same lmd: same version", ptr(ev(Create, 1000, mine)), ev(Update, 1000, theirs), Ignore, 0, 0, "", false},
		{"violation: update before create", ptr(ev(Create, 2000, mine)), ev(Update, 1000, theirs), Ignore, 0, 0, "", true},
		{"create/delete later: normal order", ptr(ev(Create, 1000, mine)), ev(Delete, 2000, theirs), Accept, Delete, 2000, theirs, false},
		{"update/delete later: normal order", ptr(ev(Update, 1000, mine)), ev(Delete, 2000, theirs), Accept, Delete, 2000, theirs, false},
		{"violation: delete before update", ptr(ev(Update, 2000, mine)), ev(Delete, 1000, theirs), Ignore, 0, 0, "", true},
		{"violation: delete before create", ptr(ev(Create, 2000, mine)), ev(Delete, 1000, theirs), Ignore, 0, 0, "", true},
		{"delete/create later: recreated", ptr(ev(Delete, 1000, mine)), ev(Create, 2000, theirs), Accept, Create, 2000, theirs, false},
		{"delete/create earlier: before deletion", ptr(ev(Delete, 2000, mine)), ev(Create, 1000, theirs), Ignore, 0, 0, "", false},
		{"violation: update after delete", ptr(ev(Delete, 1000, mine)), ev(Update, 2000, theirs), Accept, Update, 2000, theirs, true},
		{"delete/update earlier: before deletion", ptr(ev(Delete, 2000, mine)), ev(Update, 1000, theirs), Ignore, 0, 0, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Resolve(tt.cur, tt.in)
			if d.Action != tt.action || d.Violation != tt.violation {
				t.Fatalf("got %v violation=%v (rule %s), want %v violation=%v", d.Action, d.Violation, d.Rule, tt.action, tt.violation)
			}
			if d.Action == Ignore {
				return
			}
			if d.Result.Stat != tt.stat || d.Result.LMD != tt.lmd || d.Result.CID != tt.cid {
				t.Fatalf("result %v lmd=%d cid=%q, want %v lmd=%d cid=%q", d.Result.Stat, d.Result.LMD, d.Result.CID, tt.stat, tt.lmd, tt.cid)
			}
		})
	}
}

// Every pair of stats meets a rule, and no rule lets an older lmd win except
// the two the thesis names (earlier CREATE, earlier DELETE).
func TestResolveTotal(t *testing.T) {
	stats := []Stat{Create, Update, Delete}
	for _, a := range stats {
		for _, b := range stats {
			for _, dl := range []int64{-1, 0, 1} {
				cur := ev(a, 1000, "m")
				d := Resolve(&cur, ev(b, 1000+dl, "s"))
				if d.Rule == "" {
					t.Fatalf("%v/%v dl=%d: no rule", a, b, dl)
				}
				if d.Action == Accept && dl < 0 && d.Rule != "delete-delete-earlier" {
					t.Errorf("%v/%v: older event accepted by %s", a, b, d.Rule)
				}
			}
		}
	}
}

func ptr(e Event) *Event { return &e }

func TestDayOf(t *testing.T) {
	for _, tt := range []struct {
		unix, day int64
	}{{0, 0}, {86399, 0}, {86400, 1}, {-1, -1}, {11883 * 86400, 11883}, {1008242754, 11669}} {
		if got := DayOf(tt.unix); got != tt.day {
			t.Errorf("DayOf(%d) = %d, want %d", tt.unix, got, tt.day)
		}
	}
}

func TestSaneDate(t *testing.T) {
	const now = 1_700_000_000
	for _, tt := range []struct {
		name    string
		in, out int64
		ok      bool
	}{
		{"normal", now - 100, now - 100, true},
		{"before 1993", MinSaneDate - 1, 0, false},
		{"first of 1993", MinSaneDate, MinSaneDate, true},
		{"skew within a day is now", now + 3600, now, true},
		{"more than a day ahead", now + MaxSkew + 1, 0, false},
	} {
		got, err := SaneDate(tt.in, now)
		if (err == nil) != tt.ok || got != tt.out {
			t.Errorf("%s: SaneDate(%d) = %d, %v", tt.name, tt.in, got, err)
		}
	}
}

func TestRecordLen(t *testing.T) {
	for _, e := range []Event{
		ev(Create, 1000, "c"),
		{URL: "http://x/", Size: 0, LMD: 1, LPD: 123456789012, CID: "h:1 X", Stat: Delete, TTL: 99, Digest: "sha256:ab", ETag: `"x"`},
	} {
		if got, want := RecordLen(&e), len(AppendRecord(nil, &e)); got != want {
			t.Errorf("RecordLen = %d, want %d", got, want)
		}
	}
}
