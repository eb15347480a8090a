package protocol

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/crawl/sitemap"
	"github.com/cocrawl/cocrawl/webevents"
)

// ResourceSync (ANSI/NISO Z39.99-2017) out: a peer's web-events as change
// lists, so a tool that speaks ResourceSync follows a peer without knowing
// the share protocol. spec/share-protocol.md, section 13, is the mapping;
// in short:
//
//	/.well-known/resourcesync                 Source Description
//	/resourcesync/capabilitylist.xml          Capability List: one change list index
//	/resourcesync/changelist.xml              Change List Index: the days kept, each in pages
//	/resourcesync/changelist/<day>-<page>.xml Change List: one page of a day's log
//
// A page is the records of the day file that start in a window of
// rsPageBytes bytes, one <url> per record in log order, so a change list
// never exceeds the sitemap limits (50,000 URLs, 50 MB) whatever the
// records hold, and a page of a past day never changes. Written by hand
// with encoding/xml's escaping: the documents are small and fixed, and
// streaming them keeps a page's memory at one record.
const (
	rsNamespaces   = `xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" xmlns:rs="http://www.openarchives.org/rs/terms/"`
	rsDescription  = sitemap.SourceDescriptionPath
	rsCapabilities = "/resourcesync/capabilitylist.xml"
	rsIndex        = "/resourcesync/changelist.xml"
	rsDayPrefix    = "/resourcesync/changelist/"
	// rsPageBytes: a record of the day file takes at least about 40
	// bytes, so a page holds at most about 26,000 records, and one takes
	// at most 6 times its bytes in XML (a URL of '&' escaped), so a page
	// is at most about 7 MB.
	rsPageBytes = 1 << 20
	// rsDays is how many days back the index lists (a peer keeps 30 by
	// default).
	rsDays = 31
)

// isResourceSync says whether a path is one of the ResourceSync documents.
func isResourceSync(p string) bool {
	return p == rsDescription || p == rsCapabilities || p == rsIndex || strings.HasPrefix(p, rsDayPrefix)
}

// serveResourceSync answers the ResourceSync documents.
func (s *Server) serveResourceSync(w http.ResponseWriter, r *http.Request) {
	base := "http"
	if r.TLS != nil {
		base = "https"
	}
	base += "://" + r.Host
	p := r.URL.Path
	h := w.Header()
	h.Set("Content-Type", "application/xml; charset=utf-8")
	switch {
	case p == rsDescription:
		h.Set("Cache-Control", "max-age=3600")
		s.writeXML(w, r, func(bw *bufio.Writer) error {
			fmt.Fprintf(bw, "<urlset %s>\n  <rs:md capability=\"description\"/>\n", rsNamespaces)
			fmt.Fprintf(bw, "  <url><loc>%s</loc><rs:md capability=\"capabilitylist\"/></url>\n</urlset>\n", escape(base+rsCapabilities))
			return nil
		})
	case p == rsCapabilities:
		h.Set("Cache-Control", "max-age=3600")
		s.writeXML(w, r, func(bw *bufio.Writer) error {
			fmt.Fprintf(bw, "<urlset %s>\n  <rs:ln rel=\"up\" href=\"%s\"/>\n  <rs:md capability=\"capabilitylist\"/>\n", rsNamespaces, escape(base+rsDescription))
			fmt.Fprintf(bw, "  <url><loc>%s</loc><rs:md capability=\"changelist\"/></url>\n</urlset>\n", escape(base+rsIndex))
			return nil
		})
	case p == rsIndex:
		h.Set("Cache-Control", "max-age=60")
		// The hub that pushes this list's changes (spec 7.9).
		self := base + rsIndex
		if r.URL.RawQuery != "" {
			self += "?" + r.URL.RawQuery
		}
		h.Set("Link", fmt.Sprintf("<%s%s>; rel=\"hub\", <%s>; rel=\"self\"", base, WebSubPath, self))
		if f, ok := requestFilter(w, r); ok {
			s.serveChangeListIndex(w, r, base, f)
		}
	default:
		day, page, ok := parseDayPage(strings.TrimPrefix(p, rsDayPrefix))
		if !ok {
			http.NotFound(w, r)
			return
		}
		if f, ok := requestFilter(w, r); ok {
			s.serveChangeList(w, r, base, day, page, f)
		}
	}
}

// serveChangeListIndex lists the pages of the days kept, oldest first.
// rsQuery is the query a filtered change list's links carry.
func rsQuery(f *DayFilter) string {
	if f == nil {
		return ""
	}
	return "?" + f.Query()
}

func (s *Server) serveChangeListIndex(w http.ResponseWriter, r *http.Request, base string, f *DayFilter) {
	today := webevents.DayOf(time.Now().Unix())
	var days []webevents.DayInfo
	for d := today - rsDays + 1; d <= today; d++ {
		view, ok, err := s.openDay(d, f)
		info := view.info
		if err != nil {
			s.openError(w, d, err)
			return
		}
		if ok && info.Records > 0 {
			days = append(days, info)
		}
	}
	s.writeXML(w, r, func(bw *bufio.Writer) error {
		fmt.Fprintf(bw, "<sitemapindex %s>\n  <rs:ln rel=\"up\" href=\"%s\"/>\n", rsNamespaces, escape(base+rsCapabilities))
		from := today
		if len(days) > 0 {
			from = days[0].Day
		}
		fmt.Fprintf(bw, "  <rs:md capability=\"changelist\" from=\"%s\"/>\n", rsTime(webevents.DayStart(from)))
		for _, info := range days {
			for page := int64(0); page*rsPageBytes < info.Size; page++ {
				fmt.Fprintf(bw, "  <sitemap><loc>%s</loc><rs:md capability=\"changelist\" %s/></sitemap>\n",
					escape(fmt.Sprintf("%s%s%d-%d.xml%s", base, rsDayPrefix, info.Day, page, rsQuery(f))), rsSpan(info.Day, today))
			}
		}
		bw.WriteString("</sitemapindex>\n")
		return nil
	})
}

// rsSpan is a day's from and until; today has no until yet.
func rsSpan(day, today int64) string {
	span := `from="` + rsTime(webevents.DayStart(day)) + `"`
	if day < today {
		span += ` until="` + rsTime(webevents.DayStart(day+1)) + `"`
	}
	return span
}

// errPageEnd stops a day read at the end of a page.
var errPageEnd = errors.New("end of page")

// serveChangeList writes one page of a day's log: the records that start
// in [page·rsPageBytes, (page+1)·rsPageBytes) of the day file, withheld
// records left out.
func (s *Server) serveChangeList(w http.ResponseWriter, r *http.Request, base string, day, page int64, f *DayFilter) {
	view, ok, err := s.openDay(day, f)
	info := view.info
	switch {
	case err != nil:
		s.openError(w, day, err)
		return
	case !ok || page*rsPageBytes >= max(info.Size, 1):
		http.NotFound(w, r)
		return
	}
	today := webevents.DayOf(time.Now().Unix())
	if day < today && (page+1)*rsPageBytes < info.Size {
		w.Header().Set("Cache-Control", "max-age=86400") // complete: it never changes
	} else {
		w.Header().Set("Cache-Control", "max-age=60")
	}
	start, end := page*rsPageBytes, (page+1)*rsPageBytes
	s.writeXML(w, r, func(bw *bufio.Writer) error {
		fmt.Fprintf(bw, "<urlset %s>\n  <rs:ln rel=\"up\" href=\"%s\"/>\n  <rs:ln rel=\"index\" href=\"%s\"/>\n",
			rsNamespaces, escape(base+rsCapabilities), escape(base+rsIndex+rsQuery(f)))
		fmt.Fprintf(bw, "  <rs:md capability=\"changelist\" %s/>\n", rsSpan(day, today))
		err := view.read(start, func(offset int64, e webevents.Event) error {
			switch {
			case offset >= end:
				return errPageEnd
			case offset < start:
				return nil // began on the page before
			case e.From != "" && s.withhold != nil && s.withhold(e.From):
				return nil // spec 4.5: a distrusted source's records are not published
			}
			writeChange(bw, e)
			return nil
		})
		if err != nil && !errors.Is(err, errPageEnd) {
			return err
		}
		bw.WriteString("</urlset>\n")
		return nil
	})
}

// writeChange writes one record as a change list entry.
func writeChange(bw *bufio.Writer, e webevents.Event) {
	change := "updated"
	switch e.Stat {
	case webevents.Create:
		change = "created"
	case webevents.Delete:
		change = "deleted"
	}
	fmt.Fprintf(bw, "  <url><loc>%s</loc><rs:md change=\"%s\" datetime=\"%s\"", escape(e.URL), change, rsTime(e.LMD))
	if e.Stat != webevents.Delete {
		if e.Size > 0 {
			fmt.Fprintf(bw, " length=\"%d\"", e.Size)
		}
		if h, ok := strings.CutPrefix(e.Digest, "sha256:"); ok && isSHA256(h) {
			fmt.Fprintf(bw, " hash=\"sha-256:%s\"", h)
		}
	}
	bw.WriteString("/></url>\n")
}

// isSHA256 says whether s is a SHA-256 in hex, as a digest a peer sent
// must be before it goes into an attribute.
func isSHA256(s string) bool {
	b, err := hex.DecodeString(s)
	return err == nil && len(b) == sha256.Size
}

// writeXML writes the XML declaration and body; a HEAD gets the headers.
// An error after the first bytes cannot change the status: the document
// is cut short, which a parser reports.
func (s *Server) writeXML(w http.ResponseWriter, r *http.Request, body func(*bufio.Writer) error) {
	if r.Method == http.MethodHead {
		return
	}
	bw := bufio.NewWriterSize(w, 32<<10)
	bw.WriteString(xml.Header)
	if err := body(bw); err != nil {
		s.log.Warn("resourcesync document cut short", "path", r.URL.Path, "err", err)
	}
	_ = bw.Flush()
}

// parseDayPage reads "<day>-<page>.xml".
func parseDayPage(name string) (day, page int64, ok bool) {
	name, found := strings.CutSuffix(name, ".xml")
	d, p, dash := strings.Cut(name, "-")
	if !found || !dash || strings.ContainsAny(name, "+ ") {
		return 0, 0, false
	}
	day, err1 := strconv.ParseInt(d, 10, 64)
	page, err2 := strconv.ParseInt(p, 10, 64)
	if err1 != nil || err2 != nil || day < 0 || day > 1<<31 || page < 0 || page > 1<<31 {
		return 0, 0, false
	}
	return day, page, true
}

// rsTime is a W3C datetime in UTC, to the second.
func rsTime(unix int64) string { return time.Unix(unix, 0).UTC().Format(time.RFC3339) }

func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
