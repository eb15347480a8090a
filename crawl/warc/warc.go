// Package warc writes the responses a crawler fetched as WARC/1.1 files
// (ISO 28500:2017), for researchers and archivists, with the National
// Library of Norway's github.com/nlnwa/gowarc/v3: each fetch as a request
// record and a response record, or, for a page that did not change, a
// revisit record without its body. Files rotate by size and are gzipped
// record by record, as archives' tools expect.
//
// A response is recorded as the crawler's HTTP client parsed it: the
// status line and header fields as received (names in canonical case),
// without Transfer-Encoding, and the body as read. A body cut at the
// crawler's size cap is recorded as read, marked WARC-Truncated: length.
package warc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nlnwa/gowarc/v3"
)

// Kind says how a fetch is recorded.
type Kind int

const (
	// Response: a new or changed page (or any other answer: a redirect, a
	// 404), recorded whole.
	Response Kind = iota
	// NotModified: a 304 to a conditional request, recorded as a revisit
	// of the server-not-modified profile.
	NotModified
	// SameBytes: a 200 whose payload is the last one's byte for byte, a
	// revisit of the identical-payload-digest profile.
	SameBytes
	// SameText: a 200 whose bytes changed but whose visible text did not,
	// by the crawler's content fingerprint (spec 7.4.1): a revisit of
	// ProfileSameText.
	SameText
)

// ProfileSameText is the revisit profile of a page whose bytes changed
// only in what the content fingerprint leaves out (dates, counters,
// tokens): the record holds its HTTP headers, and WARC-Payload-Digest the
// digest of the payload not kept.
const ProfileSameText = "urn:x-cocrawl:warc:revisit:same-text-fingerprint"

// Capture is one fetch to record.
type Capture struct {
	URL       string
	Kind      Kind
	Time      time.Time // when the request was sent
	Server    string    // the address that answered, IP:port
	Method    string
	ReqHeader http.Header
	Proto     string // "HTTP/1.1"
	Status    int
	Header    http.Header
	Body      []byte
	Truncated bool // the body is cut at the crawler's cap
	// Fingerprint is the page's content fingerprint, for SameText.
	Fingerprint string
}

// Options shape a Writer.
type Options struct {
	Dir     string
	MaxSize int64  // bytes a file may reach before the next; 0 means 1 GiB
	Prefix  string // of the file names; default "cocrawl-"
	// Software is named in each file's warcinfo record.
	Software string
}

// Writer writes captures to rotating WARC files. It is safe for
// concurrent use.
type Writer struct {
	w        *gowarc.WarcFileWriter
	opts     Options
	records  atomic.Int64
	revisits atomic.Int64
	bytes    atomic.Int64
	mu       sync.Mutex
	closed   bool
}

// Open starts a Writer in dir, which it creates.
func Open(o Options) (*Writer, error) {
	if o.Dir == "" {
		return nil, errors.New("warc: no folder")
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("warc: %w", err)
	}
	if o.MaxSize <= 0 {
		o.MaxSize = 1 << 30
	}
	if o.Prefix == "" {
		o.Prefix = "cocrawl-"
	}
	names := &fileNames{dir: o.Dir, prefix: o.Prefix}
	w := gowarc.NewWarcFileWriter(
		gowarc.WithFileNameGenerator(names),
		gowarc.WithMaxFileSize(o.MaxSize),
		gowarc.WithCompression(true),
		gowarc.WithRecordOptions(gowarc.WithAddMissingDigest(true), gowarc.WithAddMissingRecordId(true), gowarc.WithAddMissingContentLength(true)),
		gowarc.WithWarcInfoFunc(func(b gowarc.WarcRecordBuilder) error {
			fields := &gowarc.WarcFields{}
			fields.Set("software", o.Software)
			fields.Set("format", "WARC File Format 1.1")
			fields.Set("conformsTo", "https://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/")
			fields.Set("description", "pages polled by a cocrawl peer; unchanged pages as revisits")
			_, err := b.WriteString(fields.String())
			return err
		}),
	)
	return &Writer{w: w, opts: o}, nil
}

// fileNames names files by time and serial, and, unlike gowarc's default
// generator, asks the network nothing (that one looks up an outbound
// address for every name).
type fileNames struct {
	dir, prefix string
	serial      atomic.Int32
}

func (f *fileNames) NewWarcfileName() (string, string) {
	return f.dir, fmt.Sprintf("%s%s-%05d-%d.warc", f.prefix, time.Now().UTC().Format("20060102150405"), f.serial.Add(1), os.Getpid())
}

// Keep writes one capture: a request record and a response or revisit
// record, concurrent to each other. Captures are written one at a time:
// gowarc writes them through one file writer anyway, and its record
// options set a global of github.com/google/uuid at every record
// (uuid.EnableRandPool), a data race between records built at once.
func (w *Writer) Keep(c Capture) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return errors.New("warc: writer closed")
	}
	resp, err := w.response(c)
	if err != nil {
		return err
	}
	req, err := request(c, resp.RecordId())
	if err != nil {
		return err
	}
	var n int64
	for _, r := range w.w.Write(req, resp) {
		if r.Err != nil {
			return fmt.Errorf("warc: write %s: %w", c.URL, r.Err)
		}
		n += r.BytesWritten
	}
	w.records.Add(2)
	w.bytes.Add(n)
	if c.Kind != Response {
		w.revisits.Add(1)
	}
	return nil
}

// response builds the response record, turned into a revisit for a page
// that did not change.
func (w *Writer) response(c Capture) (gowarc.WarcRecord, error) {
	var block bytes.Buffer
	proto := c.Proto
	if proto == "" {
		proto = "HTTP/1.1"
	}
	fmt.Fprintf(&block, "%s %d %s\r\n", proto, c.Status, http.StatusText(c.Status))
	writeHeader(&block, c.Header, "Transfer-Encoding")
	block.WriteString("\r\n")
	block.Write(c.Body)
	b := gowarc.NewRecordBuilder(gowarc.Response, gowarc.WithAddMissingDigest(true), gowarc.WithAddMissingRecordId(true), gowarc.WithAddMissingContentLength(true))
	if _, err := b.Write(block.Bytes()); err != nil {
		return nil, err
	}
	b.AddWarcHeader(gowarc.WarcTargetURI, c.URL)
	b.AddWarcHeaderTime(gowarc.WarcDate, c.Time)
	b.AddWarcHeader(gowarc.ContentType, "application/http;msgtype=response")
	if ip, _, ok := strings.Cut(c.Server, ":"); ok && ip != "" && !strings.HasPrefix(c.Server, "[") {
		b.AddWarcHeader(gowarc.WarcIPAddress, ip)
	} else if i := strings.LastIndex(c.Server, "]:"); strings.HasPrefix(c.Server, "[") && i > 0 {
		b.AddWarcHeader(gowarc.WarcIPAddress, c.Server[1:i])
	}
	if c.Truncated {
		b.AddWarcHeader(gowarc.WarcTruncated, "length")
	}
	rec, _, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("warc: response of %s: %w", c.URL, err)
	}
	profile := ""
	switch c.Kind {
	case Response:
		return rec, nil
	case NotModified:
		profile = gowarc.ProfileServerNotModifiedV1_1
	case SameBytes, SameText:
		profile = gowarc.ProfileIdenticalPayloadDigestV1_1
	}
	rv, err := rec.ToRevisitRecord(&gowarc.RevisitRef{Profile: profile, TargetUri: c.URL})
	if err != nil {
		return nil, fmt.Errorf("warc: revisit of %s: %w", c.URL, err)
	}
	if c.Kind == SameText {
		// gowarc makes revisits of the standard profiles only; this one
		// differs by its profile and the fingerprint it was judged by.
		rv.WarcHeader().Set(gowarc.WarcProfile, ProfileSameText)
		if c.Fingerprint != "" {
			rv.WarcHeader().Set("WARC-Cocrawl-Fingerprint", c.Fingerprint)
		}
	}
	return rv, nil
}

// request builds the request record of a capture.
func request(c Capture, concurrentTo string) (gowarc.WarcRecord, error) {
	var block bytes.Buffer
	method := c.Method
	if method == "" {
		method = http.MethodGet
	}
	target := c.URL
	host := ""
	if i := strings.Index(target, "://"); i >= 0 {
		rest := target[i+3:]
		host, target = rest, "/"
		if j := strings.IndexAny(rest, "/?"); j >= 0 {
			host, target = rest[:j], rest[j:]
			if target[0] == '?' {
				target = "/" + target
			}
		}
	}
	fmt.Fprintf(&block, "%s %s HTTP/1.1\r\nHost: %s\r\n", method, target, host)
	writeHeader(&block, c.ReqHeader, "Host")
	block.WriteString("\r\n")
	b := gowarc.NewRecordBuilder(gowarc.Request, gowarc.WithAddMissingDigest(true), gowarc.WithAddMissingRecordId(true), gowarc.WithAddMissingContentLength(true))
	if _, err := b.Write(block.Bytes()); err != nil {
		return nil, err
	}
	b.AddWarcHeader(gowarc.WarcTargetURI, c.URL)
	b.AddWarcHeaderTime(gowarc.WarcDate, c.Time)
	b.AddWarcHeader(gowarc.ContentType, "application/http;msgtype=request")
	if !strings.HasPrefix(concurrentTo, "<") {
		concurrentTo = "<" + concurrentTo + ">"
	}
	b.AddWarcHeader(gowarc.WarcConcurrentTo, concurrentTo)
	rec, _, err := b.Build()
	if err != nil {
		return nil, fmt.Errorf("warc: request of %s: %w", c.URL, err)
	}
	return rec, nil
}

// writeHeader writes h in name order, without the named fields.
func writeHeader(b *bytes.Buffer, h http.Header, skip ...string) {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		skipped := false
		for _, s := range skip {
			skipped = skipped || strings.EqualFold(k, s)
		}
		if skipped {
			continue
		}
		for _, v := range h[k] {
			b.WriteString(k + ": " + strings.NewReplacer("\r", " ", "\n", " ").Replace(v) + "\r\n")
		}
	}
}

// Stats are what a Writer wrote.
type Stats struct {
	Records, Revisits, Bytes int64 // bytes before compression
}

// Stats returns the counts so far.
func (w *Writer) Stats() Stats {
	return Stats{Records: w.records.Load(), Revisits: w.revisits.Load(), Bytes: w.bytes.Load()}
}

// Close finishes the open file.
func (w *Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	return w.w.Close()
}

// Summary is what Check found in a folder's WARC files.
type Summary struct {
	Files int
	// Records counts the records by type, a revisit's with its profile's
	// last part ("revisit server-not-modified").
	Records map[string]int
	Invalid []string // what strict validation said, by file and record
}

// Check reads every WARC file of dir with gowarc's strict validation:
// what a researcher's tools will find in them.
func Check(dir string) (Summary, error) {
	s := Summary{Records: map[string]int{}}
	names, err := filepath.Glob(filepath.Join(dir, "*.warc.gz"))
	if err != nil {
		return s, err
	}
	for _, name := range names {
		if err := s.read(name); err != nil {
			return s, fmt.Errorf("warc: %s: %w", name, err)
		}
		s.Files++
	}
	return s, nil
}

func (s *Summary) read(name string) error {
	r, err := gowarc.NewWarcFileReader(name, 0, gowarc.WithStrictValidation())
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		for _, v := range rec.Validation {
			s.Invalid = append(s.Invalid, fmt.Sprintf("%s: %s: %v", filepath.Base(name), rec.WarcRecord, v))
		}
		k := rec.WarcRecord.Type().String()
		if p := rec.WarcRecord.WarcHeader().Get(gowarc.WarcProfile); p != "" {
			k += " " + p[strings.LastIndexAny(p, "/:")+1:]
		}
		s.Records[k]++
		rec.Close()
	}
}
