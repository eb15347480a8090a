// Package revisit is the mathematics of revisiting pages that change: a
// page's change-rate estimate from its visits (Rate, after Cho and
// Garcia-Molina, "Estimating frequency of change", 2003), the
// freshness-optimal visit frequencies under a request budget
// (OptimalFrequencies, after "Effective page refresh policies", 2003),
// and the pieces a crawler schedules with incrementally: Bins, which fits
// the budget's multiplier μ over estimated rates, and Interval, which
// turns μ and a page's estimate into its next revisit interval. It has no
// dependencies, so the crawler (package crawl) and the simulator (package
// sim) schedule by the same rules.
package revisit
