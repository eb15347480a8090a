package protocol

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/cocrawl/cocrawl/webevents"
)

// serveDay serves one day file with http.ServeContent, which does the
// conditional requests, Range, HEAD and 416. What stays ours: the one
// range form the spec uses, gzip, and the stream slots.
//
// With a prefix query it serves the day file filtered to the records of
// that prefix (spec section 7.7): a day file of its own, with its own
// offsets, size and entity tag, and a Share-Filter header saying so.
func (s *Server) serveDay(w http.ResponseWriter, r *http.Request, day int64) {
	filter, ok := requestFilter(w, r)
	if !ok {
		return
	}
	view, ok, err := s.openDay(day, filter)
	info := view.info
	if err != nil {
		s.openError(w, day, err)
		return
	}
	if !ok {
		http.Error(w, "no data for this day", http.StatusNotFound)
		return
	}
	r = r.Clone(r.Context())
	if _, open := parseOpenRange(r.Header.Get("Range")); !open {
		r.Header.Del("Range") // other forms are ignored, as HTTP allows (spec 5.2)
	}
	gz := r.Header.Get("Range") == "" && acceptsGzip(r.Header.Get("Accept-Encoding"))
	h := w.Header()
	variant := ""
	if filter != nil {
		variant = filter.tag()
	}
	etag := dayETag(s.store.ID(), day, info.Size, variant, gz)
	sameRecords(r.Header, etag)
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-cache") // a day file may grow: revalidate
	h.Set("Vary", "Accept-Encoding")
	h.Set("ETag", etag)
	// Bytes served under a generation never change (spec 7.3): a client
	// resuming with Range from another generation starts the day over.
	h.Set(GenerationHeader, s.store.ID())
	dw := &dayWriter{ResponseWriter: w, slots: s.slots, clients: s.clients, client: s.clients.key(r), gzip: gz, head: r.Method == http.MethodHead}
	// The reader's size is the DayInfo snapshot: entries appended since are
	// cut off, so the body matches the ETag and Content-Length announced.
	body := &dayReader{read: view.read, day: day, size: info.Size, withhold: s.withhold}
	http.ServeContent(dw, r, "", info.Updated, body)
	if err := dw.finish(); err != nil || body.err != nil {
		s.log.Debug("share: day file not sent whole", "day", day, "sent", body.sent, "err", errors.Join(err, body.err))
	}
	s.metrics.sent(body.sent)
}

// GenerationHeader names the day file's generation: the store's ID, which
// changes when offsets once served may be written again (a rebuilt store,
// or one reopened after a crash).
const GenerationHeader = "Share-Generation"

// dayETag is a day file's entity tag: the store (a rebuilt store never
// matches an old tag), the day and the size (the file only grows), the
// filter (DayFilter.tag; "" for the whole day) and the encoding.
func dayETag(storeID string, day, size int64, filter string, gz bool) string {
	tag := fmt.Sprintf(`%s-%d-%d`, storeID, day, size)
	if filter != "" {
		tag += "-" + filter
	}
	if gz {
		tag += "-gz"
	}
	return `"` + tag + `"`
}

// sameRecords rewrites the tags in If-None-Match and If-Range that name
// the other encoding of this day file into ours: both variants describe
// the same records, so a client holding either need not fetch them again.
func sameRecords(h http.Header, etag string) {
	base := strings.Replace(etag, `-gz"`, `"`, 1)
	for _, name := range []string{"If-None-Match", "If-Range"} {
		v := h.Get(name)
		if v == "" {
			continue
		}
		tags := strings.Split(v, ",")
		for i, t := range tags {
			t = strings.TrimSpace(t)
			weak := strings.HasPrefix(t, "W/")
			if strings.Replace(strings.TrimPrefix(t, "W/"), `-gz"`, `"`, 1) == base {
				t = etag
				if weak {
					t = "W/" + t
				}
			}
			tags[i] = t
		}
		h.Set(name, strings.Join(tags, ", "))
	}
}

// parseOpenRange accepts the one form the spec uses, "bytes=N-".
func parseOpenRange(h string) (int64, bool) {
	v, ok := strings.CutPrefix(strings.TrimSpace(h), "bytes=")
	if !ok || !strings.HasSuffix(v, "-") || strings.Contains(v, ",") {
		return 0, false
	}
	n, err := strconv.ParseInt(v[:len(v)-1], 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if strings.EqualFold(strings.TrimSpace(name), "gzip") {
			q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
			return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
		}
	}
	return false
}

// dayWriter is the ResponseWriter ServeContent writes a day file to. When
// a body is about to be sent it takes a stream slot, or answers 503 when
// none is free; on a whole-file answer to a client that accepts gzip it
// compresses.
type dayWriter struct {
	http.ResponseWriter
	slots   chan struct{}
	clients *clientSlots
	client  string
	gzip    bool
	head    bool
	held    bool // a slot is held
	refused bool // 503 sent: the body is dropped
	zw      *gzip.Writer
}

var errNoSlot = errors.New("protocol: no stream slot free")

func (d *dayWriter) WriteHeader(code int) {
	h := d.Header()
	if code != http.StatusOK && code != http.StatusPartialContent {
		d.ResponseWriter.WriteHeader(code)
		return
	}
	if !d.head {
		ok := d.clients.take(d.client)
		if ok {
			select {
			case d.slots <- struct{}{}:
				d.held = true
			default:
				d.clients.give(d.client)
				ok = false
			}
		}
		if !ok {
			d.refused = true
			for _, k := range []string{"Content-Length", "Content-Range", "Content-Encoding", "ETag", "Last-Modified"} {
				h.Del(k)
			}
			h.Set("Retry-After", "1")
			d.ResponseWriter.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(d.ResponseWriter, "too many transfers, retry\n")
			return
		}
	}
	if d.gzip && code == http.StatusOK {
		h.Del("Content-Length")
		h.Set("Content-Encoding", "gzip")
		if !d.head {
			d.zw, _ = gzip.NewWriterLevel(d.ResponseWriter, gzip.BestSpeed)
		}
	}
	d.ResponseWriter.WriteHeader(code)
}

func (d *dayWriter) Write(p []byte) (int, error) {
	switch {
	case d.refused:
		return 0, errNoSlot
	case d.zw != nil:
		return d.zw.Write(p)
	}
	return d.ResponseWriter.Write(p)
}

// finish ends the gzip stream and gives the slot back.
func (d *dayWriter) finish() error {
	var err error
	if d.zw != nil {
		err = d.zw.Close()
	}
	if d.held {
		<-d.slots
		d.clients.give(d.client)
		d.held = false
	}
	return err
}

// dayChunk is how much of a day file one read transaction of the store
// serves: a slow client then holds no transaction open for long.
const dayChunk = 256 << 10

// dayReader is a day file as an io.ReadSeeker over the store's day log
// (or a filtered view of it), read in chunks of whole records; size fixes
// its end.
type dayReader struct {
	read     logReader
	withhold func(from string) bool
	day      int64
	size     int64
	pos      int64
	buf      []byte // bytes [bufAt, bufAt+len(buf)) of the file
	bufAt    int64
	sent     int64 // bytes handed to Read's callers
	err      error // a store error, for the log
}

func (d *dayReader) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekStart:
	case io.SeekCurrent:
		offset += d.pos
	case io.SeekEnd:
		offset += d.size
	default:
		return 0, errors.New("protocol: day file: bad whence")
	}
	if offset < 0 {
		return 0, errors.New("protocol: day file: negative position")
	}
	d.pos = offset
	return offset, nil
}

func (d *dayReader) Read(p []byte) (int, error) {
	if d.pos >= d.size {
		return 0, io.EOF
	}
	if d.pos < d.bufAt || d.pos >= d.bufAt+int64(len(d.buf)) {
		if err := d.fill(); err != nil {
			d.err = err
			return 0, err
		}
	}
	n := copy(p, d.buf[d.pos-d.bufAt:])
	d.pos += int64(n)
	d.sent += int64(n)
	return n, nil
}

// errChunkDone stops ReadDay once a chunk is full.
var errChunkDone = errors.New("protocol: chunk read")

// fill reads the records from the one holding byte pos on, up to a chunk
// or the end of the file, in one read transaction.
func (d *dayReader) fill() error {
	d.buf, d.bufAt = d.buf[:0], -1
	err := d.read(d.pos, func(off int64, e webevents.Event) error {
		if d.bufAt < 0 {
			d.bufAt = off
		}
		if e.From != "" && d.withhold != nil && d.withhold(e.From) {
			d.buf = appendWithheld(d.buf, webevents.RecordLen(&e))
		} else {
			d.buf = webevents.AppendRecord(d.buf, &e)
		}
		if len(d.buf) >= dayChunk || d.bufAt+int64(len(d.buf)) >= d.size {
			return errChunkDone
		}
		return nil
	})
	if err != nil && err != errChunkDone {
		return fmt.Errorf("protocol: read day %d: %w", d.day, err)
	}
	if d.bufAt < 0 || d.bufAt > d.pos || d.bufAt+int64(len(d.buf)) <= d.pos {
		return fmt.Errorf("protocol: read day %d: no record at byte %d", d.day, d.pos)
	}
	d.buf = d.buf[:min(int64(len(d.buf)), d.size-d.bufAt)]
	return nil
}

// appendWithheld appends n bytes that a day-file reader skips: comment
// lines of at most 80 bytes and a blank line, standing in for a record of
// length n that the peer no longer publishes (spec section 4.5).
func appendWithheld(dst []byte, n int) []byte {
	const note = "# withheld"
	rest := n - 1 // the blank line that ends a record
	for rest > 0 {
		l := min(rest, 80)
		switch {
		case l == 1:
			dst = append(dst, '\n')
		default:
			line := make([]byte, l)
			for i := range line {
				line[i] = ' '
			}
			line[0] = '#'
			if l-1 >= len(note) {
				copy(line, note)
			}
			line[l-1] = '\n'
			dst = append(dst, line...)
		}
		rest -= l
	}
	return append(dst, '\n')
}
