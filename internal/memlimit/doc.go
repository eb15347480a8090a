// Package memlimit bounds the Go collector's headroom: how much garbage
// the heap may hold above what was live at the last collection.
//
// With Go's default (GOGC=100) the heap grows to twice its live size
// before a collection, so a peer whose frontier keeps 400 MB live holds
// 800 MB, and at a hundred million URLs 4 GB live becomes 8 GB. The
// frontier's per-URL structures are maps of integers, which the collector
// does not scan, so collecting more often costs little CPU; Keep sets
// GOGC (debug.SetGCPercent) every few seconds to the headroom over the
// live heap, so that a collection starts when the heap's objects are the
// live heap plus a share of it, and memory follows what is live.
//
// It set a memory limit (debug.SetMemoryLimit) before, at the live heap
// plus the headroom. A limit counts every span the heap holds, so the
// heap's fragmentation and free spans took their share of the headroom: a
// crawl at 13 million URLs collected every 100 to 150 MB allocated rather
// than 256 MiB, and the runtime returned memory to the system to stay
// under the limit. Pacing by GOGC counts the objects only
// (docs/performance.md, "the store's takes and tables").
//
// Written here: no module of the Go proxy does this. Modules such as
// KimMachineGun/automemlimit set a fixed limit from a container's cgroup,
// which is a ceiling, not a headroom that follows the live heap. An
// operator's own GOGC or GOMEMLIMIT wins: Keep does nothing when either
// is set.
package memlimit
