// Package sim will hold the discrete-event simulator of the thesis's experiments, driving the same peer/rho controllers as a live peer.
//
// Not built yet: see issue 6. The folder exists so the layout of DESIGN.md
// shows the architecture from the start.
package sim
