package crawl

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// A URL's stored state is binary: a version byte, then varints and two
// length-prefixed strings. The URL is the entry's key and is not repeated.
// Stores written before it hold JSON (a value starting with '{'), which
// still loads. The binary form is about a third of the JSON's size and
// decodes several times faster: a restart reads every state of the URLs
// kept in memory.
const stateCodecV1 = 1

// Flags of the binary state.
const (
	stateGone = 1 << iota
	stateNotHTML
	stateExcluded
	stateHasDue // a zero Due has no UnixNano
)

// maxStateString bounds a decoded ETag or Last-Modified.
const maxStateString = 8 << 10

// appendState appends the binary form of s, without its URL.
func appendState(b []byte, s *URLState) []byte {
	var flags uint64
	for _, f := range []struct {
		on  bool
		bit uint64
	}{{s.Gone, stateGone}, {s.NotHTML, stateNotHTML}, {s.Excluded, stateExcluded}, {!s.Due.IsZero(), stateHasDue}} {
		if f.on {
			flags |= f.bit
		}
	}
	b = append(b, stateCodecV1)
	b = binary.AppendUvarint(b, flags)
	b = binary.AppendUvarint(b, uint64(max(s.Depth, 0)))
	if !s.Due.IsZero() {
		b = binary.AppendVarint(b, s.Due.UnixNano())
	}
	b = binary.AppendVarint(b, int64(s.Interval))
	b = binary.AppendUvarint(b, uint64(max(s.Polls, 0)))
	b = binary.AppendUvarint(b, uint64(s.Links))
	b = binary.AppendVarint(b, s.HostNext)
	b = binary.AppendVarint(b, s.Seen)
	b = binary.AppendUvarint(b, uint64(s.Rate.Visits))
	b = binary.AppendUvarint(b, uint64(s.Rate.Changes))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(s.Rate.Watched))
	b = binary.LittleEndian.AppendUint32(b, math.Float32bits(s.Rate.Still))
	b = binary.AppendUvarint(b, uint64(len(s.ETag)))
	b = append(b, s.ETag...)
	b = binary.AppendUvarint(b, uint64(len(s.LastMod)))
	return append(b, s.LastMod...)
}

// stateReader reads the binary form, keeping the first error.
type stateReader struct {
	b   []byte
	err error
}

func (r *stateReader) uvarint(limit uint64) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > limit {
		r.err = errors.New("bad unsigned field")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errors.New("bad signed field")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *stateReader) float32() float32 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 4 {
		r.err = errors.New("short float")
		return 0
	}
	v := math.Float32frombits(binary.LittleEndian.Uint32(r.b))
	if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
		r.err = errors.New("not a finite float")
		return 0
	}
	r.b = r.b[4:]
	return v
}

// bytes reads a string's bytes, in the buffer read.
func (r *stateReader) bytes() []byte {
	n := r.uvarint(maxStateString)
	if r.err != nil {
		return nil
	}
	if uint64(len(r.b)) < n {
		r.err = errors.New("short string")
		return nil
	}
	b := r.b[:n]
	r.b = r.b[n:]
	return b
}

// decodeState reads a stored state of url: binary, or the JSON of older
// stores.
func decodeState(url string, v []byte) (URLState, error) {
	if len(v) > 0 && v[0] == '{' {
		var s URLState
		if err := json.Unmarshal(v, &s); err != nil {
			return s, fmt.Errorf("crawl: frontier entry %q: %w", url, err)
		}
		if s.URL != url {
			return s, fmt.Errorf("crawl: frontier entry %q holds %q", url, s.URL)
		}
		return s, nil
	}
	if len(v) == 0 || v[0] != stateCodecV1 {
		return URLState{}, fmt.Errorf("crawl: frontier entry %q: unknown encoding", url)
	}
	r := &stateReader{b: v[1:]}
	s := URLState{URL: url}
	flags := r.uvarint(math.MaxUint8)
	s.Gone, s.NotHTML, s.Excluded = flags&stateGone != 0, flags&stateNotHTML != 0, flags&stateExcluded != 0
	s.Depth = int(r.uvarint(math.MaxInt32))
	if flags&stateHasDue != 0 {
		s.Due = time.Unix(0, r.varint()).UTC()
	}
	s.Interval = time.Duration(r.varint())
	s.Polls = int(r.uvarint(math.MaxInt32))
	s.Links = uint32(r.uvarint(math.MaxUint32))
	s.HostNext, s.Seen = r.varint(), r.varint()
	s.Rate.Visits, s.Rate.Changes = uint32(r.uvarint(math.MaxUint32)), uint32(r.uvarint(math.MaxUint32))
	s.Rate.Watched, s.Rate.Still = r.float32(), r.float32()
	etag, lastMod := r.bytes(), r.bytes()
	switch {
	case r.err != nil:
		return s, fmt.Errorf("crawl: frontier entry %q: %w", url, r.err)
	case len(r.b) > 0:
		return s, fmt.Errorf("crawl: frontier entry %q: %d bytes left over", url, len(r.b))
	case s.Interval < 0:
		return s, fmt.Errorf("crawl: frontier entry %q: negative interval", url)
	}
	if len(etag)+len(lastMod) > 0 {
		var b strings.Builder
		b.Grow(len(url) + len(etag) + len(lastMod))
		b.WriteString(url)
		b.Write(etag)
		b.Write(lastMod)
		s.URL, s.ETag, s.LastMod = splitPacked(b.String(), len(url), len(etag))
	}
	return s, nil
}

// packStrings puts a state's URL, ETag and Last-Modified in one
// allocation. The collector marks the hosts' heads at every cycle, and
// each pointer it follows to another object is a cache miss once a
// crawl's heap is large: three strings in one object are one.
func packStrings(u, etag, lastMod string) (string, string, string) {
	if etag == "" && lastMod == "" {
		return u, etag, lastMod
	}
	return splitPacked(u+etag+lastMod, len(u), len(etag))
}

// splitPacked cuts the URL, the ETag and the Last-Modified out of their
// packed string.
func splitPacked(s string, urlLen, etagLen int) (string, string, string) {
	return s[:urlLen], s[urlLen : urlLen+etagLen], s[urlLen+etagLen:]
}
