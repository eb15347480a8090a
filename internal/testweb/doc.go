// Package testweb will hold a synthetic web on loopback for tests,
// benchmarks and the demo: many hosts whose pages are created, updated and
// deleted by Poisson processes, with ground truth.
//
// Not built yet: see issue 3.
package testweb
