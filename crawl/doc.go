// Package crawl will hold the polling crawler: frontier, politeness, robots.txt, fetch, change detection, link extraction, URL normalisation and revisit scheduling.
//
// Not built yet: see issue 3. The folder exists so the layout of DESIGN.md
// shows the architecture from the start.
package crawl
