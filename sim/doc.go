// Package sim is the discrete-event simulator of the thesis's chapter 5 and
// the experiments of its chapter 6, driving the same peer/rho controllers
// as a live peer.
//
// A run (Run, Setup) simulates a web of objects created, updated and
// deleted by Poisson processes and N crawlers that poll it and merge from
// one another under algorithm 5.1, on links and a network shared by
// processor sharing. Freshness is kept exactly at O(1) per change (world.go)
// and integrated over time. An experiment (RunExperiment) plans many runs,
// spreads them over the cores, and turns their results into the thesis's
// figures and tables (Report, written as CSV and SVG). Crawlers may lie
// (CrawlerSpec.Lies) or spot-check what they merge with the policy of
// package peer/trust (CrawlerSpec.Checked; liars.go), which the liars
// experiment compares. sim/README.md states the model's choices and what
// the runs found.
package sim
