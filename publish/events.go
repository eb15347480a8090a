package publish

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// batch gathers the events of one look at the root and the state they
// leave, applied once the store has them.
type batch struct {
	events []webevents.Event
	set    map[string]fileState
	gone   []string
}

func (b *batch) put(e webevents.Event, s fileState) {
	b.events = append(b.events, e)
	if b.set == nil {
		b.set = map[string]fileState{}
	}
	b.set[e.URL] = s
}

// look compares one path with what was published: a file, a folder (a
// new one is watched and walked: a folder moved in brings its files), or
// nothing (a file or folder removed or moved away).
func (p *Publisher) look(rel string, b *batch) {
	abs := filepath.Join(p.root, filepath.FromSlash(rel))
	fi, err := os.Lstat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		p.removed(rel, b)
	case err != nil:
		p.countRead(rel, err)
	case fi.IsDir():
		p.walk(abs, b, nil)
	default:
		p.file(rel, b)
	}
}

// removed publishes the deletion of the file at rel, or of every file
// under it when it was a folder.
func (p *Publisher) removed(rel string, b *batch) {
	now := p.cfg.Now().Unix()
	u, ok := p.urlOf(rel)
	if !ok {
		return
	}
	p.mu.Lock()
	var gone []string
	if _, live := p.files[u]; live {
		gone = append(gone, u) // a file (an index file: its folder's URL)
	} else if dir, ok := p.urlOf(rel + "/"); ok {
		for fu := range p.files {
			if strings.HasPrefix(fu, dir) {
				gone = append(gone, fu)
			}
		}
	}
	p.mu.Unlock()
	for _, g := range gone {
		b.events = append(b.events, webevents.Event{URL: g, LMD: now, LPD: now, CID: p.cfg.CID, Stat: webevents.Delete})
		b.gone = append(b.gone, g)
	}
}

// file compares the file at rel with what was published of its URL, and
// returns that URL when the file is one to publish.
func (p *Publisher) file(rel string, b *batch) (string, bool) {
	u, ok := p.urlOf(rel)
	if !ok {
		return "", false
	}
	abs := filepath.Join(p.root, filepath.FromSlash(rel))
	fi, err := os.Stat(abs) // a symlink publishes what it points to, as a web server serves it
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			p.removed(rel, b)
			return "", false
		}
		p.countRead(rel, err)
		return "", false
	}
	if !fi.Mode().IsRegular() {
		return "", false
	}
	now := p.cfg.Now()
	lmd, size := fi.ModTime().Unix(), fi.Size()
	if lmd < webevents.MinSaneDate || fi.ModTime().After(now.Add(time.Hour)) {
		// Before 1993 (an archive's or a reproducible build's epoch) or
		// more than an hour ahead: mergers would refuse the record.
		p.mu.Lock()
		p.stats.BadDates++
		p.mu.Unlock()
		return "", false
	}
	p.mu.Lock()
	old, known := p.files[u]
	p.mu.Unlock()
	mtime := fi.ModTime().UnixNano()
	if known && old.lmd == lmd && old.size == size && (old.mtime == 0 || old.mtime == mtime) {
		if old.mtime == 0 {
			p.mu.Lock()
			old.mtime = mtime
			p.files[u] = old
			p.mu.Unlock()
		}
		return u, true
	}
	digest, err := digestOf(abs)
	if err != nil {
		p.countRead(rel, err)
		return "", false
	}
	if known && old.lmd == lmd && old.digest == digest {
		p.mu.Lock()
		old.mtime = mtime
		p.files[u] = old
		p.mu.Unlock()
		return u, true
	}
	e := webevents.Event{URL: u, Size: size, LMD: lmd, LPD: max(now.Unix(), lmd), CID: p.cfg.CID, Stat: webevents.Create, Digest: digest}
	if known {
		e.Stat = webevents.Update
		if lmd <= old.lmd {
			// Restored from an older copy: published as the web server
			// dates it, though mergers keep the later state they hold.
			p.mu.Lock()
			p.stats.BackwardsDates++
			p.mu.Unlock()
		}
	}
	// Two versions within one second share an lmd (HTTP dates have
	// seconds); mergers keep the first, as a poller would see either.
	b.put(e, fileState{lmd: lmd, size: size, mtime: mtime, digest: digest, stat: e.Stat})
	return u, true
}

func (p *Publisher) countRead(rel string, err error) {
	p.mu.Lock()
	p.stats.ReadErrors++
	p.mu.Unlock()
	p.log.Debug("cannot read", "path", rel, "err", err)
}

// digestOf is the file's SHA-256, as a crawler's digest of the body the
// web server sends ("sha256:hex").
func digestOf(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// commit records a batch; on success the published state follows it, on
// failure (a full disk) its paths are looked at again after a second.
func (p *Publisher) commit(b *batch, retry []string, notify bool) bool {
	if len(b.events) == 0 {
		return true
	}
	err := p.st.Record(b.events)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		p.stats.RecordErrors++
		p.log.Error("cannot record the site's changes; retrying", "events", len(b.events), "err", err)
		later := p.cfg.Now().Add(time.Second - p.cfg.Settle)
		for _, rel := range retry {
			p.pending[rel] = later
		}
		return false
	}
	urls := make([]string, 0, len(b.events))
	for _, e := range b.events {
		urls = append(urls, e.URL)
		switch e.Stat {
		case webevents.Create:
			p.stats.Created++
		case webevents.Update:
			p.stats.Updated++
		case webevents.Delete:
			p.stats.Deleted++
		}
	}
	for u, s := range b.set {
		p.files[u] = s
	}
	for _, u := range b.gone {
		delete(p.files, u)
	}
	p.stats.LastEvent = p.cfg.Now().Unix()
	if notify && p.cfg.Notify != nil {
		p.cfg.Notify(urls)
	}
	return true
}
