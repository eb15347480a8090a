package protocol

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
)

// Protocol versions this package speaks. A peer announces the highest it
// speaks; readers accept any 1.x (section 7 of the spec).
const (
	Version10 = "1.0"
	Version11 = "1.1"
	// CurrentVersion is what this implementation announces.
	CurrentVersion = Version11
)

// ShareControl is the content of a robots.shr file.
type ShareControl struct {
	Version    string   // required: "major.minor"
	Crawler    string   // required: "host:port Moniker"
	Contact    string   // optional: the operator's e-mail, as in the From header
	Special    []string // optional, repeatable: URL prefixes this crawler knows best
	Repository string   // required: URL (or path, resolved against robots.shr) of the day files

	// Optional fields of version 1.1.
	PeerID   string   // libp2p peer ID of this crawler
	P2PAddrs []string // libp2p multiaddrs, repeatable
	Rho      string   // advertised poll ratio, a decimal in [0,1]
	// Probe is the seek controller's probe report (spec 3.1), as
	// rho.ParseReport reads it; kept as text so that a malformed report
	// costs the reader the report, not the merge.
	Probe string
}

// ParseShareControl reads a robots.shr. Unknown fields are ignored; missing
// required fields, a repeated single field, or a version whose major number
// is not 1 are errors.
func ParseShareControl(r io.Reader, lim Limits) (*ShareControl, error) {
	lim = lim.withDefaults()
	br := bufio.NewReaderSize(r, lim.MaxLineBytes)
	sc := &ShareControl{}
	seen := map[string]bool{}
	var read int64
	for line, n := 1, 0; ; line++ {
		raw, err := br.ReadSlice('\n')
		read += int64(len(raw))
		if err == bufio.ErrBufferFull {
			return nil, fmt.Errorf("robots.shr line %d: %w", line, ErrLineTooLong)
		}
		if read > min(lim.MaxBytes, 1<<20) {
			return nil, fmt.Errorf("robots.shr: %w", ErrTooLarge)
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("robots.shr: read: %w", err)
		}
		if t := bytes.TrimSpace(raw); len(t) > 0 && t[0] != '#' {
			if n++; n > lim.MaxShareFields {
				return nil, fmt.Errorf("robots.shr: %w: over %d lines", ErrTooManyFields, lim.MaxShareFields)
			}
			if bytes.IndexByte(t, 0) >= 0 || hasControlBytes(t) {
				return nil, fmt.Errorf("robots.shr line %d: %w", line, ErrBinary)
			}
			name, value, ok := splitField(t)
			if !ok {
				return nil, fmt.Errorf("robots.shr line %d: %w", line, ErrSyntax)
			}
			if err := sc.set(name, value, seen); err != nil {
				return nil, fmt.Errorf("robots.shr line %d: %w", line, err)
			}
		}
		if err == io.EOF {
			break
		}
	}
	for _, f := range [...]string{"version", "crawler", "repository"} {
		if !seen[f] {
			return nil, fmt.Errorf("robots.shr: %w: %s", ErrMissingField, f)
		}
	}
	return sc, nil
}

func hasControlBytes(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' || c == 0x7f {
			return true
		}
	}
	return false
}

func (sc *ShareControl) set(name, value string, seen map[string]bool) error {
	single := map[string]*string{
		"version": &sc.Version, "crawler": &sc.Crawler, "contact": &sc.Contact,
		"repository": &sc.Repository, "peer-id": &sc.PeerID, "rho": &sc.Rho,
		"probe": &sc.Probe,
	}
	if p, ok := single[name]; ok {
		if seen[name] {
			return fmt.Errorf("%w: %s", ErrDuplicateField, name)
		}
		seen[name] = true
		*p = value
		if name == "version" {
			if _, _, err := ParseVersion(value); err != nil {
				return err
			}
		}
		if value == "" && (name == "crawler" || name == "repository") {
			return fmt.Errorf("%w: %s is empty", ErrMissingField, name)
		}
		return nil
	}
	if value == "" {
		return nil // an empty repeatable field says nothing
	}
	switch name {
	case "special":
		sc.Special = append(sc.Special, value)
	case "p2p-addr":
		sc.P2PAddrs = append(sc.P2PAddrs, value)
	}
	return nil // unknown fields are ignored
}

// ParseVersion splits "major.minor" and rejects a major version other than 1.
func ParseVersion(v string) (major, minor int, err error) {
	a, b, ok := strings.Cut(v, ".")
	major, err1 := strconv.Atoi(a)
	minor, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || major < 0 || minor < 0 {
		return 0, 0, fmt.Errorf("%w: %q is not major.minor", ErrUnsupportedVersion, v)
	}
	if major != 1 {
		return major, minor, fmt.Errorf("%w: %q (this peer speaks 1.x)", ErrUnsupportedVersion, v)
	}
	return major, minor, nil
}

// RepositoryURL resolves the repository field against the URL the
// robots.shr was fetched from, and makes sure it ends in "/" so day file
// names can be appended.
func (sc *ShareControl) RepositoryURL(shrURL *url.URL) (*url.URL, error) {
	ref, err := url.Parse(sc.Repository)
	if err != nil {
		return nil, fmt.Errorf("robots.shr: repository %q: %w", sc.Repository, err)
	}
	u := shrURL.ResolveReference(ref)
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("robots.shr: repository %q is not http(s)", sc.Repository)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

// WriteTo writes the file in the order of the thesis's example, 1.1 fields last.
func (sc *ShareControl) WriteTo(w io.Writer) (int64, error) {
	var b bytes.Buffer
	field := func(name, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\n", name, v)
		}
	}
	field("version", sc.Version)
	field("crawler", sc.Crawler)
	field("contact", sc.Contact)
	for _, s := range sc.Special {
		field("special", s)
	}
	field("repository", sc.Repository)
	field("peer-id", sc.PeerID)
	for _, a := range sc.P2PAddrs {
		field("p2p-addr", a)
	}
	field("rho", sc.Rho)
	field("probe", sc.Probe)
	return b.WriteTo(w)
}

// Check lists what in sc breaks a SHOULD or MUST of the spec beyond what
// ParseShareControl already rejects; `cocrawl shr lint` reports them.
// checkProbe, when not nil, validates the probe field: its codec belongs to
// the controller that writes it (package peer/rho), which protocol does
// not import.
func (sc *ShareControl) Check(checkProbe func(string) error) []string {
	var out []string
	host, moniker, _ := strings.Cut(sc.Crawler, " ")
	if h, port, err := splitHostPort(host); err != nil || h == "" || port == "" || strings.TrimSpace(moniker) == "" {
		out = append(out, fmt.Sprintf("crawler %q is not \"host:port Moniker\"", sc.Crawler))
	}
	if u, err := url.Parse(sc.Repository); err != nil || !u.IsAbs() {
		out = append(out, fmt.Sprintf("repository %q is not an absolute URL (1.0 peers need one)", sc.Repository))
	}
	for _, s := range sc.Special {
		if u, err := url.Parse(s); err != nil || !u.IsAbs() || (u.Scheme != "http" && u.Scheme != "https") {
			out = append(out, fmt.Sprintf("special %q is not an absolute http(s) URL", s))
		}
	}
	if sc.Contact != "" && !strings.Contains(sc.Contact, "@") {
		out = append(out, fmt.Sprintf("contact %q is not an e-mail address", sc.Contact))
	}
	if sc.Rho != "" {
		if r, err := strconv.ParseFloat(sc.Rho, 64); err != nil || r < 0 || r > 1 {
			out = append(out, fmt.Sprintf("rho %q is not a number in [0,1]", sc.Rho))
		}
	}
	if sc.Probe != "" && checkProbe != nil {
		if err := checkProbe(sc.Probe); err != nil {
			out = append(out, fmt.Sprintf("probe %q: %v", sc.Probe, err))
		}
	}
	return out
}

func splitHostPort(hp string) (host, port string, err error) {
	i := strings.LastIndexByte(hp, ':')
	if i < 0 {
		return "", "", fmt.Errorf("no port")
	}
	host, port = hp[:i], hp[i+1:]
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", "", err
	}
	return strings.Trim(host, "[]"), port, nil
}
