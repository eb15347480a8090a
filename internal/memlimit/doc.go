// Package memlimit bounds the Go collector's headroom: how much garbage
// the heap may hold above what was live at the last collection.
//
// With Go's default (GOGC=100) the heap grows to twice its live size
// before a collection, so a peer whose frontier keeps 400 MB live holds
// 800 MB, and at a hundred million URLs 4 GB live becomes 8 GB. The
// frontier's per-URL structures are maps of integers, which the collector
// does not scan, so collecting more often costs little CPU; Headroom keeps
// the limit at the live heap plus a share of it (debug.SetMemoryLimit),
// raised as the live heap grows, so that memory follows what is live.
//
// Written here: no module of the Go proxy does this. Modules such as
// KimMachineGun/automemlimit set a fixed limit from a container's cgroup,
// which is a ceiling, not a headroom that follows the live heap. An
// operator's own GOMEMLIMIT wins: Keep does nothing when it is set.
package memlimit
