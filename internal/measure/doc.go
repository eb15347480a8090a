// Package measure holds the experiments that measure the crawler's
// policies against ground truth, behind `cocrawl measure`:
//
//   - Revisits: revisit policies (optimal, adaptive, uniform) on a testweb
//     whose pages change at rates spread over orders of magnitude, each
//     policy's time-averaged freshness as a share of the optimum for the
//     request rate politeness allows;
//   - FirstVisits: the order of first visits on real HTML sites served
//     from a folder on loopback, as the share of hot pages (the top tenth
//     by in-links) found after a tenth of the site, live and against
//     breadth-first, backlink (IB') and PageRank (IR') orderings simulated
//     on the site's own link graph.
//
// docs/performance.md reports their figures.
package measure
