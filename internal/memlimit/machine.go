package memlimit

import (
	"os"
	"strconv"
	"strings"

	"github.com/pbnjay/memory"
)

// machineMemory is the memory the process may use: the machine's, or its
// control group's limit when lower (a container's). 0 when neither is
// known.
func machineMemory() uint64 {
	total := memory.TotalMemory()
	if lim := cgroupLimit(); lim > 0 && (total == 0 || lim < total) {
		return lim
	}
	return total
}

// cgroupFiles are where a control group's memory limit is read: cgroup v2,
// then v1. Read by hand: pbnjay/memory reads the machine's memory only,
// and the modules that read cgroups (automemlimit) set a limit from them,
// not a number to read.
var cgroupFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// cgroupLimit is the memory limit of the process's control group, 0 when
// there is none ("max", or v1's huge "unlimited") or it cannot be read.
func cgroupLimit() uint64 {
	for _, f := range cgroupFiles {
		if lim, ok := parseLimit(f); ok {
			return lim
		}
	}
	return 0
}

// parseLimit reads one limit file; ok is false when it is missing or does
// not hold a number.
func parseLimit(path string) (uint64, bool) {
	b, err := os.ReadFile(path)
	if err != nil || len(b) > 64 {
		return 0, false
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 0, true
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if n >= 1<<62 { // cgroup v1's "no limit"
		return 0, true
	}
	return n, true
}
