package publish

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/cocrawl/cocrawl/webevents"
)

// Run loads what was published before, watches the root, publishes what
// changed since, then every change until ctx ends.
func (p *Publisher) Run(ctx context.Context) error {
	if err := p.load(); err != nil {
		return err
	}
	w, err := fsnotify.NewBufferedWatcher(4096)
	if err != nil {
		return fmt.Errorf("publish: watch: %w", err)
	}
	p.mu.Lock()
	p.watch = w // Stats reads it
	p.mu.Unlock()
	defer w.Close()
	first := len(p.files) == 0
	// Watches go on before the files are compared, so a change made during
	// the walk is either seen by it or reported by the watch.
	tick := time.NewTicker(p.cfg.Settle / 2)
	defer tick.Stop()
	lastRescan, lastConfirm, lastTick := p.cfg.Now(), p.cfg.Now(), p.cfg.Now()
	owed := 0.0 // confirmations due, by ConfirmCycle
	// A rescan that could not record (a full disk) is tried again soon.
	failed := !p.rescan(!first)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events:
			if !ok {
				return errors.New("publish: the watcher closed")
			}
			p.noteEvent(ev)
		case err, ok := <-w.Errors:
			if !ok {
				return errors.New("publish: the watcher closed")
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				p.mu.Lock()
				p.stats.Overflows++
				p.mu.Unlock()
				p.log.Warn("the file system's event queue overflowed; rescanning", "root", p.root)
				failed = !p.rescan(true)
				lastRescan = p.cfg.Now()
				continue
			}
			p.log.Warn("watch error", "err", err)
		case <-tick.C:
			now := p.cfg.Now()
			p.settle(now)
			every := p.cfg.Rescan
			if p.isDegraded() {
				every = min(every, time.Minute)
			}
			if failed {
				every = min(every, 10*time.Second)
			}
			if now.Sub(lastRescan) >= every {
				failed = !p.rescan(true)
				lastRescan = now
			}
			if p.cfg.ConfirmCycle > 0 {
				owed += float64(p.Stats().Files) * now.Sub(lastTick).Seconds() / p.cfg.ConfirmCycle.Seconds()
				if now.Sub(lastConfirm) >= time.Hour {
					owed = max(owed, 1)
				}
				owed = min(owed, 10*maxConfirmsPerTick)
				if n := min(int(owed), maxConfirmsPerTick); n > 0 {
					p.confirm(n)
					owed -= float64(n)
					lastConfirm = now
				}
			}
			lastTick = now
		}
	}
}

func (p *Publisher) isDegraded() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.degraded
}

// noteEvent queues the path of a watch event; it is looked at once quiet.
func (p *Publisher) noteEvent(ev fsnotify.Event) {
	rel, ok := p.relative(ev.Name)
	if !ok {
		return
	}
	p.mu.Lock()
	p.pending[rel] = p.cfg.Now()
	p.mu.Unlock()
}

// relative is path's slash-separated name under the root; false for the
// root itself, paths outside it, hidden and skipped names.
func (p *Publisher) relative(path string) (string, bool) {
	rel, err := filepath.Rel(p.root, path)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") {
		return "", false
	}
	rel = filepath.ToSlash(rel)
	for _, seg := range strings.Split(rel, "/") {
		if strings.HasPrefix(seg, ".") {
			return "", false
		}
	}
	return rel, !p.skip[rel]
}

// settle publishes the pending paths that have been quiet for Settle.
func (p *Publisher) settle(now time.Time) {
	p.mu.Lock()
	var ready []string
	for rel, t := range p.pending {
		if now.Sub(t) >= p.cfg.Settle {
			ready = append(ready, rel)
			delete(p.pending, rel)
		}
	}
	p.mu.Unlock()
	if len(ready) == 0 {
		return
	}
	var b batch
	// Paths gone first: a folder moved within the root is gone under its
	// old name and new under its new one, and its watches must be dropped
	// before they are added again under the new name (inotify keeps one
	// watch per folder, with the name it was added under).
	var present []string
	for _, rel := range ready {
		if _, err := os.Lstat(filepath.Join(p.root, filepath.FromSlash(rel))); errors.Is(err, fs.ErrNotExist) {
			p.unwatch(rel)
			p.removed(rel, &b)
		} else {
			present = append(present, rel)
		}
	}
	for _, rel := range present {
		p.look(rel, &b)
	}
	p.commit(&b, ready, true)
}

// walk watches every folder under abs and compares every file in it; seen,
// when given, collects the URLs found.
func (p *Publisher) walk(abs string, b *batch, seen map[string]bool) {
	_ = filepath.WalkDir(abs, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			p.countRead(path, err)
			if d != nil && d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		rel, ok := p.relative(path)
		if path != p.root && !ok {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			p.watchDir(path)
			return nil
		}
		if u, ok := p.file(rel, b); ok && seen != nil {
			seen[u] = true
		}
		return nil
	})
}

// watchDir adds an inotify watch; one that fails (the kernel's limit of
// watches per user) leaves the publisher on minute rescans.
func (p *Publisher) watchDir(path string) {
	if p.watch == nil {
		return
	}
	if err := p.watch.Add(path); err != nil {
		p.mu.Lock()
		p.stats.WatchErrors++
		p.degraded = true
		p.mu.Unlock()
		p.log.Warn("cannot watch a folder; rescanning every minute", "path", path, "err", err)
	}
}

// unwatch drops the watches of a folder that is gone and of the folders
// under it.
func (p *Publisher) unwatch(rel string) {
	if p.watch == nil {
		return
	}
	abs := filepath.Join(p.root, filepath.FromSlash(rel))
	for _, w := range p.watch.WatchList() {
		if w == abs || strings.HasPrefix(w, abs+string(filepath.Separator)) {
			_ = p.watch.Remove(w) // the kernel may have dropped it already
		}
	}
}

// rescan compares the whole root with what was published. notify says
// whether its changes go to Notify: not on the first publication of a
// site, which would push every file. It reports whether the changes were
// recorded.
func (p *Publisher) rescan(notify bool) bool {
	var b batch
	seen := map[string]bool{}
	p.walk(p.root, &b, seen)
	now := p.cfg.Now().Unix()
	p.mu.Lock()
	p.stats.Rescans++
	for u := range p.files {
		if !seen[u] {
			b.events = append(b.events, webevents.Event{URL: u, LMD: now, LPD: now, CID: p.cfg.CID, Stat: webevents.Delete})
			b.gone = append(b.gone, u)
		}
	}
	p.mu.Unlock()
	return p.commit(&b, nil, notify)
}
