package webevents

import "strconv"

// AppendRecord appends the canonical text of e as one day-file record,
// terminated by the blank line that separates records:
//
//	url: http://example.com/
//	size: 9824
//	lmd: 993226666
//	lpd: 1008242754
//	cid: example.org:8080 Crawler/1.0
//	stat: U
//	<blank line>
//
// ttl, digest and etag follow stat when they are set. The store needs the
// exact length of this text to key its day log by byte offset, which is why
// the encoder of a single record lives here; package protocol streams it.
// The event must have passed Validate, so no value holds a line break.
func AppendRecord(dst []byte, e *Event) []byte {
	dst = append(dst, "url: "...)
	dst = append(dst, e.URL...)
	dst = append(dst, "\nsize: "...)
	dst = strconv.AppendInt(dst, e.Size, 10)
	dst = append(dst, "\nlmd: "...)
	dst = strconv.AppendInt(dst, e.LMD, 10)
	dst = append(dst, "\nlpd: "...)
	dst = strconv.AppendInt(dst, e.LPD, 10)
	dst = append(dst, "\ncid: "...)
	dst = append(dst, e.CID...)
	dst = append(dst, "\nstat: "...)
	dst = append(dst, byte(e.Stat))
	if e.TTL > 0 {
		dst = append(dst, "\nttl: "...)
		dst = strconv.AppendInt(dst, e.TTL, 10)
	}
	if e.Digest != "" {
		dst = append(dst, "\ndigest: "...)
		dst = append(dst, e.Digest...)
	}
	if e.ETag != "" {
		dst = append(dst, "\netag: "...)
		dst = append(dst, e.ETag...)
	}
	if e.Fingerprint != "" {
		dst = append(dst, "\nfp: "...)
		dst = append(dst, e.Fingerprint...)
	}
	return append(dst, "\n\n"...)
}

// RecordLen returns len(AppendRecord(nil, e)) without allocating.
func RecordLen(e *Event) int {
	n := len("url: \nsize: \nlmd: \nlpd: \ncid: \nstat: X\n\n") +
		len(e.URL) + digits(e.Size) + digits(e.LMD) + digits(e.LPD) + len(e.CID)
	if e.TTL > 0 {
		n += len("\nttl: ") + digits(e.TTL)
	}
	if e.Digest != "" {
		n += len("\ndigest: ") + len(e.Digest)
	}
	if e.ETag != "" {
		n += len("\netag: ") + len(e.ETag)
	}
	if e.Fingerprint != "" {
		n += len("\nfp: ") + len(e.Fingerprint)
	}
	return n
}

func digits(v int64) int {
	n := 1
	if v < 0 {
		n++
		v = -v
	}
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}
