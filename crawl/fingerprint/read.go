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
// (Builder); Of is for a document read on its own.
// pathAndQuery is the document's own URL path and query, whose words
// are left out (Builder.IgnoreWordsOf).
func Of(r io.Reader, pathAndQuery string) (uint64, bool, error) {
	z := html.NewTokenizer(r)
	z.SetMaxBuf(maxTokenBytes)
	var b Builder
	b.IgnoreWordsOf(pathAndQuery)
	for {
		switch tt := z.Next(); tt {
		case html.ErrorToken:
			fp, ok := b.Sum()
			if z.Err() == io.EOF {
				return fp, ok, nil
			}
			return fp, ok, z.Err()
		case html.TextToken:
			b.Text(z.Text())
		case html.StartTagToken, html.SelfClosingTagToken:
			name, hasAttr := z.TagName()
			a := atom.Lookup(name)
			role := ""
			for hasAttr && LandmarkHolder(a) {
				var k, v []byte
				k, v, hasAttr = z.TagAttr()
				if string(k) == "role" {
					role = string(v)
				}
			}
			b.Start(a, role, tt == html.SelfClosingTagToken)
		case html.EndTagToken:
			name, _ := z.TagName()
			b.End(atom.Lookup(name))
		}
	}
}

// LandmarkHolder says whether pages put ARIA landmark roles on this
// element: only then is its role attribute worth reading.
func LandmarkHolder(a atom.Atom) bool {
	switch a {
	case atom.Div, atom.Section, atom.Ul, atom.Ol, atom.Table, atom.Td, atom.Article:
		return true
	}
	return false
}
