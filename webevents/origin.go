package webevents

import (
	"errors"
	"strings"
)

// Origin is the scheme and authority of an absolute http or https URL,
// lower-cased ("https://example.org:8443"), or "" when u has none. The
// store indexes each day's log by it, so that the records of one site are
// read without the rest of the day (the filtered day files of the share
// protocol, spec section 7.7).
//
// Written by hand: net/url.Parse allocates a URL for every record
// written, and the store needs only the text before the path.
func Origin(u string) string {
	i := strings.Index(u, "://")
	if i <= 0 {
		return ""
	}
	scheme := u[:i]
	if !strings.EqualFold(scheme, "http") && !strings.EqualFold(scheme, "https") {
		return ""
	}
	end := len(u)
	if j := strings.IndexAny(u[i+3:], "/?#"); j >= 0 {
		end = i + 3 + j
	}
	if end == i+3 {
		return ""
	}
	return lowerASCII(u[:end])
}

// lowerASCII lower-cases ASCII letters, without a copy when there are none.
func lowerASCII(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; 'A' <= c && c <= 'Z' {
			return strings.ToLower(s)
		}
	}
	return s
}

// ErrDayNotIndexed is returned for a day whose log was begun by a store
// that did not index origins yet: its records of one origin are found by
// reading the whole day.
var ErrDayNotIndexed = errors.New("webevents: day not indexed by origin")
