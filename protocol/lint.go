package protocol

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// Linter checks a peer's share repository against the spec.
type Linter struct {
	Client *http.Client // nil: NewHTTPClient with private addresses refused
	Limits Limits
	Days   int // how many days, today included, to check; 0 means 7
	Now    func() time.Time
	// MaxReported caps the record problems reported per day file; 0 means 20.
	MaxReported int
	// CheckProbe validates the robots.shr field probe; nil skips it.
	CheckProbe func(string) error
}

func (l *Linter) maxReported() int { return positiveOr(l.MaxReported, 20) }

func (l *Linter) now() time.Time {
	if l.Now == nil {
		return time.Now()
	}
	return l.Now()
}

// Lint returns one line per violation found at the peer whose robots.shr is
// at shrURL. It returns an error only when it could not check at all.
func (l *Linter) Lint(ctx context.Context, shrURL string) ([]string, error) {
	lim := l.Limits.withDefaults()
	base, err := url.Parse(shrURL)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("protocol: %q is not an http(s) URL", shrURL)
	}
	var out []string
	resp, err := l.get(ctx, shrURL)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return []string{fmt.Sprintf("robots.shr: status %s, want 200", resp.Status)}, nil
	}
	out = append(out, contentTypeProblem("robots.shr", resp)...)
	sc, err := ParseShareControl(io.LimitReader(resp.Body, 1<<20+1), lim)
	resp.Body.Close()
	if err != nil {
		return append(out, err.Error()), nil
	}
	for _, v := range sc.Check(l.CheckProbe) {
		out = append(out, "robots.shr: "+v)
	}
	repo, err := sc.RepositoryURL(base)
	if err != nil {
		return append(out, err.Error()), nil
	}
	today := webevents.Today(l.now())
	for day := today - int64(positiveOr(l.Days, 7)) + 1; day <= today; day++ {
		out = append(out, l.lintDay(ctx, repo, day, lim)...)
	}
	return out, nil
}

func (l *Linter) get(ctx context.Context, u string, hdr ...string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("User-Agent", "cocrawl-lint/"+CurrentVersion)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	client := l.Client
	if client == nil {
		client = defaultClient
	}
	return client.Do(req)
}

func contentTypeProblem(name string, resp *http.Response) []string {
	if ct := resp.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "text/plain") {
		return []string{fmt.Sprintf("%s: Content-Type %q, should be text/plain", name, ct)}
	}
	return nil
}

func (l *Linter) lintDay(ctx context.Context, repo *url.URL, day int64, lim Limits) []string {
	name := strconv.FormatInt(day, 10) + ".dat"
	resp, err := l.get(ctx, repo.JoinPath(name).String(), "Accept-Encoding", "gzip")
	if err != nil {
		return []string{fmt.Sprintf("%s: %v", name, err)}
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusNotFound:
		return nil // no data that day
	case http.StatusOK:
	default:
		return []string{fmt.Sprintf("%s: status %s, want 200 or 404", name, resp.Status)}
	}
	out := contentTypeProblem(name, resp)
	var body io.Reader = io.LimitReader(resp.Body, lim.MaxBytes+1)
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			return append(out, fmt.Sprintf("%s: gzip: %v", name, err))
		}
		defer zr.Close()
		body = zr
	}
	dec := NewDatReader(body, DatOptions{Limits: lim, Now: l.Now})
	reported, records := 0, 0
	report := func(s string) {
		if reported++; reported <= l.maxReported() {
			out = append(out, name+": "+s)
		}
	}
	for {
		e, err := dec.Next()
		if err == io.EOF {
			break
		}
		var re *RecordError
		if errors.As(err, &re) {
			report(re.Error())
			continue
		}
		if err != nil {
			report(err.Error())
			break
		}
		records++
		if e.Day() != day {
			report(fmt.Sprintf("record ending at byte %d: lpd %d is on day %d, not %d", dec.Offset(), e.LPD, e.Day(), day))
		}
	}
	if reported > l.maxReported() {
		out = append(out, fmt.Sprintf("%s: %d more problems not shown", name, reported-l.maxReported()))
	}
	if resp.Header.Get("ETag") == "" && resp.Header.Get("Last-Modified") == "" {
		out = append(out, name+": no ETag or Last-Modified: every merge must download it whole (1.1 SHOULD)")
	}
	return out
}
