// Package sampling times the samples of a measurement at random phases.
//
// The truth of a loopback web is sampled every so often while crawlers
// poll it, and every crawler polls each host on a grid of its politeness
// delay, all started at the same moment. A sampler on a fixed period (a
// time.Ticker of 1 s against polls 2 s apart) then looks at the same point
// of that grid each time: just before each host's next poll, where every
// page is as old as it gets. On hosts of six pages 2 s apart that read a
// lone crawler at 0.74 to 0.78 of uniform revisits' freshness where a
// sampler at random phases read 0.88 to 1.00 (docs/performance.md, "small
// hosts"). Intervals drawn at random make the samples' phases even over
// any grid, so their mean is the time average (arrivals that see time
// averages).
package sampling
