package webevents

import (
	"os"
	"strings"
	"testing"
)

// The store runs on Badger with cocrawl's changes to how it writes tables
// (third_party/badger/COCRAWL.md): go.mod replaces the module with that
// directory, its CreateTable writes the file before mapping it, and its
// table builders give their buffers to the next. A replace dropped, or a
// copy of a newer Badger without the patch, would bring back the writes
// through a mapping and their TLB flushes, and fail here.
func TestBadgerIsCocrawlsFork(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	replaced := false
	for line := range strings.Lines(string(mod)) {
		if strings.Join(strings.Fields(line), " ") == "replace github.com/dgraph-io/badger/v4 => ./third_party/badger" {
			replaced = true
		}
	}
	if !replaced {
		t.Error("go.mod does not replace github.com/dgraph-io/badger/v4 with ./third_party/badger")
	}
	src, err := os.ReadFile("../third_party/badger/table/table.go")
	if err != nil {
		t.Fatal(err)
	}
	_, create, found := strings.Cut(string(src), "func CreateTable(")
	if !found {
		t.Fatal("third_party/badger/table/table.go has no CreateTable")
	}
	create, _, _ = strings.Cut(create, "\n}\n")
	if !strings.Contains(create, "bd.writeTo(") || strings.Contains(create, "Msync") {
		t.Error("third_party/badger's CreateTable does not write the table before mapping it (cocrawl.patch not applied)")
	}
	builder, err := os.ReadFile("../third_party/badger/table/builder.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(builder), "giveBack(b.keyHashes, b.index)") {
		t.Error("third_party/badger's table builders do not give their buffers back (cocrawl.patch not applied)")
	}
}
