package sim

import (
	"os"
	"strings"
	"testing"
)

// The advice must cover whole huge pages inside the slice only: a range
// the kernel refuses (not page-aligned) is an error, and one outside the
// slice would change memory the slice does not own.
func TestAdviseHugePages(t *testing.T) {
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		t.Skip("no transparent huge pages on this kernel")
	}
	for _, n := range []int{0, 1, 1000, hugePage/8 + 1, 5*hugePage/8 + 3} {
		s := make([]uint64, n)
		if err := adviseHugePages(s); err != nil {
			t.Fatalf("%d words: %v", n, err)
		}
		// An odd start: the slice need not begin on a huge page.
		if n > 1 {
			if err := adviseHugePages(s[1:]); err != nil {
				t.Fatalf("%d words from the second: %v", n, err)
			}
		}
		for i := range s {
			s[i] = uint64(i)
		}
		for i, v := range s {
			if v != uint64(i) {
				t.Fatalf("%d words: word %d reads %d", n, i, v)
			}
		}
	}
}
