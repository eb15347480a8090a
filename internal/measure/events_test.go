package measure

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"
)

// On a web built like the real one (template noise, Last-Modified = now,
// an ETag per response, soft 404s, redirects home), the crawler's update
// events are true and complete, and its deletions are held, in every
// kind and style.
func TestEventsTrueOnTheRealWeb(t *testing.T) {
	if testing.Short() {
		t.Skip("crawls for 25 s")
	}
	rep, err := Events(context.Background(), EventsConfig{PagesPerHost: 20, ChangeEvery: 8 * time.Second,
		Delay: 100 * time.Millisecond, Run: 25 * time.Second, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Print(&out)
	t.Log("\n" + out.String())
	if len(rep.Kinds) != len(eventsKinds) || len(rep.Deletions) != 3 {
		t.Fatalf("%d kinds, %d deletion styles measured", len(rep.Kinds), len(rep.Deletions))
	}
	for _, k := range rep.Kinds {
		if k.Changes < 20 || k.Precision() < 0.95 || k.Recall() < 0.95 {
			t.Errorf("%s: %d changes seen, precision %.3f, recall %.3f", k.Kind, k.Changes, k.Precision(), k.Recall())
		}
	}
	for _, d := range rep.Deletions {
		if d.Seen < 3 || float64(d.Held) < 0.95*float64(d.Seen) {
			t.Errorf("%s: %d of %d deletions held", d.Style, d.Held, d.Seen)
		}
	}
	if rep.LiveDeleted > 0 || rep.FalseCreates > 0 {
		t.Errorf("%d live pages held deleted, %d creations of missing pages", rep.LiveDeleted, rep.FalseCreates)
	}
}

// On a real CMS (Debian's MediaWiki, whose every response differs in its
// scripts' request id and timing), edits are UPDATEs and nothing else is,
// and deleted articles are held deleted.
func TestEventsTrueOnMediaWiki(t *testing.T) {
	if testing.Short() {
		t.Skip("runs MediaWiki for a minute")
	}
	rep, err := MediaWiki(context.Background(), MediaWikiConfig{Pages: 12, ChangeEvery: 20 * time.Second,
		Delay: 100 * time.Millisecond, Run: 60 * time.Second, DeleteShare: 0.25, Seed: 3})
	if errors.Is(err, ErrNoMediaWiki) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	rep.Print(&out)
	t.Log("\n" + out.String())
	k := rep.Articles
	if k.Changes < 10 || k.Precision() < 0.95 || k.Recall() < 0.95 {
		t.Errorf("%d changes seen: precision %.3f, recall %.3f", k.Changes, k.Precision(), k.Recall())
	}
	if rep.Deleted.Seen < 2 || rep.Deleted.Held < rep.Deleted.Seen || rep.LiveDeleted > 0 {
		t.Errorf("%d of %d deletions held, %d live articles held deleted", rep.Deleted.Held, rep.Deleted.Seen, rep.LiveDeleted)
	}
}
