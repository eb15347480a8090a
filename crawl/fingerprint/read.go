package fingerprint

import (
	"io"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// maxTokenBytes bounds the tokenizer's buffer (a hostile page with one
// endless tag costs this much and no more).
const maxTokenBytes = 256 << 10

// Of reads an HTML document and returns its fingerprint (false: no words).
// A crawler computes it in the pass that finds the links instead
// (Builder); Of is for a document read on its own. pathAndQuery is the
// document's own URL path and query, whose quotes are left out
// (Builder.IgnoreWordsOf).
func Of(r io.Reader, pathAndQuery string) (uint64, bool, error) {
	b, err := Read(r, pathAndQuery)
	fp, ok := b.Sum()
	return fp, ok, err
}

// Read reads an HTML document into a Builder, for Sum, SumMasked and
// Volatile. A hostile token ends the read: what was read stands.
func Read(r io.Reader, pathAndQuery string) (*Builder, error) {
	z := html.NewTokenizer(r)
	z.SetMaxBuf(maxTokenBytes)
	b := &Builder{}
	defer b.Seal()
	b.IgnoreWordsOf(pathAndQuery)
	for {
		switch tt := z.Next(); tt {
		case html.ErrorToken:
			if z.Err() == io.EOF {
				return b, nil
			}
			return b, z.Err()
		case html.TextToken:
			b.Text(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			role, class := "", ""
			for hasAttr && BlockElement(a) {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				switch string(k) {
				case "role":
					role = string(v)
				case "class":
					class = string(v)
				}
			}
			b.Start(a, role, class, tt == html.SelfClosingTagToken)
		case html.EndTagToken:
			name, _ := z.TagName()
			b.End(atom.Lookup(name))
		}
	}
}

// BlockElement says whether an element starts a block of text whose
// attributes (role, class) the fingerprint reads.
func BlockElement(a atom.Atom) bool {
	return a != 0 && a != atom.A && !inline(a) && !void(a)
}
