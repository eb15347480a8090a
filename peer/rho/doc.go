// Package rho will hold the controllers that set the poll/merge ratio rho:
// fixed, the thesis's bang-bang controller, and one of our own, behind one
// small interface that both the live peer and the simulator drive. It
// imports nothing else of the project.
//
// Not built yet: see issue 4.
package rho
