package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/cocrawl/cocrawl/"

// allowed is the table of docs/architecture.md, "Layers": the packages of
// cocrawl each package may import. Packages not listed may import any.
var allowed = map[string][]string{
	"webevents":           {},
	"webevents/storetest": {"webevents"},
	"peer/rho":            {},
	"internal/netguard":   {},
	"internal/iolimit":    {},
	"internal/testfs":     {},
	"internal/testweb":    {},
	"internal/chart":      {},
	"protocol":            {"webevents", "crawl/sitemap", "internal/netguard", "internal/iolimit"},
	"crawl":               {"webevents", "crawl/revisit", "crawl/sitemap", "crawl/fingerprint", "crawl/warc", "internal/netguard", "internal/iolimit", "internal/fpmap"},
	"crawl/warc":          {},
	"crawl/revisit":       {},
	"crawl/fingerprint":   {},
	"crawl/sitemap":       {},
	"peer":                {"webevents", "protocol", "crawl", "crawl/fingerprint", "peer/p2p", "peer/rho", "peer/trust", "internal/netguard"},
	"peer/p2p":            {"protocol"},
	"peer/trust":          {},
	"sim":                 {"peer/rho", "peer/trust", "crawl/revisit", "internal/chart"},
	"internal/measure":    {"crawl", "crawl/revisit", "webevents", "internal/testweb", "internal/sampling", "internal/memlimit", "internal/fpmap", "peer", "protocol", "publish", "sim"},
	"internal/memlimit":   {},
	"internal/fpmap":      {},
	"internal/sampling":   {},
	"publish":             {"webevents", "crawl", "protocol"},
	"internal/demo":       {"internal/chart", "webevents", "protocol", "crawl", "peer", "peer/p2p", "peer/rho", "internal/netguard", "internal/testweb", "internal/sampling"},
}

// onlyIn names outside modules that only some packages may import; of
// the prefixes an import has, the longest decides. The libp2p node is
// peer/p2p's alone; peer names peers by libp2p's peer IDs.
var onlyIn = map[string][]string{
	"github.com/dgraph-io/badger/v4":        {"webevents"},
	"github.com/nlnwa/gowarc/":              {"crawl/warc"},
	"github.com/libp2p/":                    {"peer/p2p"},
	"github.com/libp2p/go-libp2p/core/peer": {"peer/p2p", "peer"},
}

func TestLayers(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	imports := map[string]map[string]bool{} // package -> imports, from non-test files
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		// A directory with a go.mod of its own is another module
		// (third_party/badger), not one of cocrawl's packages.
		if d.IsDir() && path != root {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir
			}
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		if imports[pkg] == nil {
			imports[pkg] = map[string]bool{}
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			imports[pkg][p] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 10 {
		t.Fatalf("found %d packages under %s; is the walk right?", len(imports), root)
	}
	for pkg, ims := range imports {
		for im := range ims {
			if own, ok := strings.CutPrefix(im, module); ok {
				if allow, listed := allowed[pkg]; listed && !contains(allow, own) {
					t.Errorf("%s imports %s: not allowed by docs/architecture.md", pkg, own)
				}
				continue
			}
			longest := ""
			for prefix := range onlyIn {
				if strings.HasPrefix(im, prefix) && len(prefix) > len(longest) {
					longest = prefix
				}
			}
			if pkgs := onlyIn[longest]; longest != "" && !contains(pkgs, pkg) && !strings.HasPrefix(pkg, "cmd/") {
				t.Errorf("%s imports %s: only %v may", pkg, im, pkgs)
			}
		}
	}
	if _, err := os.Stat(filepath.Join(root, "docs", "architecture.md")); err != nil {
		t.Errorf("the table's source: %v", err)
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
