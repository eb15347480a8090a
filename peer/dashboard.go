package peer

import (
	_ "embed"
	"net/http"
)

// The dashboard is one self-contained page: no script or style from
// elsewhere, so it works on a machine with no internet. It polls
// /api/status and /api/peers every two seconds and draws with SVG.
//
//go:embed dashboard.html
var dashboardHTML []byte

func serveDashboard(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:")
	_, _ = w.Write(dashboardHTML)
}
