package protocol

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/cocrawl/cocrawl/webevents"
)

// RecordError reports one bad record. The decoder skipped it; decoding can
// go on with the next record.
type RecordError struct {
	Line int   // line where the record starts
	Err  error // what was wrong
}

func (e *RecordError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *RecordError) Unwrap() error { return e.Err }

// DatReader decodes a day file record by record without holding more than
// one record in memory.
type DatReader struct {
	r       *bufio.Reader
	lim     Limits
	now     func() time.Time
	line    int   // lines read
	read    int64 // bytes read
	end     int64 // offset just after the last record returned and its separator
	records int64
	err     error // sticky fatal error
	// A record being assembled.
	fields  map[string]string
	start   int // its first line
	bad     error
	pending bool
}

// DatOptions configure a DatReader.
type DatOptions struct {
	Limits Limits
	// Now is the clock for the date sanity rules; nil means time.Now.
	Now func() time.Time
}

// NewDatReader returns a decoder reading from r.
func NewDatReader(r io.Reader, o DatOptions) *DatReader {
	lim := o.Limits.withDefaults()
	now := o.Now
	if now == nil {
		now = time.Now
	}
	return &DatReader{
		r:      bufio.NewReaderSize(r, lim.MaxLineBytes),
		lim:    lim,
		now:    now,
		fields: make(map[string]string, 8),
	}
}

// Offset returns the number of bytes of the file that the records returned
// so far cover, up to and including the blank line after the last one. A
// merge cursor stores it; a record that ended the file without a blank
// line is not covered, so it is read again next time rather than lost
// half-written.
func (d *DatReader) Offset() int64 { return d.end }

// Line returns the number of lines read.
func (d *DatReader) Line() int { return d.line }

// Next returns the next record. At the end it returns io.EOF. A
// *RecordError means that one record was bad and skipped; call Next again.
// Any other error is fatal and sticky: an I/O error or a limit exceeded.
func (d *DatReader) Next() (webevents.Event, error) {
	if d.err != nil {
		return webevents.Event{}, d.err
	}
	for {
		line, err := d.readLine()
		if err != nil {
			if err == io.EOF && d.pending {
				// The last record needs no blank line after it.
				return d.finish()
			}
			d.err = err
			return webevents.Event{}, err
		}
		trimmed := bytes.TrimSpace(line)
		if len(trimmed) == 0 {
			if d.pending {
				d.end = d.read
				return d.finish()
			}
			d.end = d.read // blank lines between records are covered too
			continue
		}
		if trimmed[0] == '#' {
			continue // comment line
		}
		if !d.pending {
			d.pending, d.start, d.bad = true, d.line, nil
			clear(d.fields)
		}
		if d.bad != nil {
			continue // already doomed: skip to the record's end
		}
		d.bad = d.addField(trimmed)
	}
}

// readLine returns one line with its terminator. A line over the limit is
// read to its end and discarded, so one long line costs time but no memory;
// it marks its record bad and comes back as a comment.
func (d *DatReader) readLine() ([]byte, error) {
	line, err := d.r.ReadSlice('\n')
	n := int64(len(line))
	tooLong := err == bufio.ErrBufferFull
	for err == bufio.ErrBufferFull && d.read+n <= d.lim.MaxBytes {
		line, err = d.r.ReadSlice('\n')
		n += int64(len(line))
	}
	d.read += n
	if d.read > d.lim.MaxBytes {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, d.lim.MaxBytes)
	}
	if err != nil && err != io.EOF {
		return nil, fmt.Errorf("protocol: read: %w", err)
	}
	if n == 0 {
		return nil, io.EOF
	}
	d.line++
	if tooLong {
		if !d.pending {
			d.pending, d.start = true, d.line
			clear(d.fields)
		}
		d.bad = fmt.Errorf("%w: line %d over %d bytes", ErrLineTooLong, d.line, d.lim.MaxLineBytes)
		return []byte("#"), nil
	}
	return line, nil
}

func (d *DatReader) addField(line []byte) error {
	if bytes.IndexByte(line, 0) >= 0 {
		return ErrBinary
	}
	name, value, ok := splitField(line)
	if !ok {
		return fmt.Errorf("%w: line %d", ErrSyntax, d.line)
	}
	if len(d.fields) >= d.lim.MaxFields {
		return fmt.Errorf("%w: over %d", ErrTooManyFields, d.lim.MaxFields)
	}
	if _, dup := d.fields[name]; dup {
		return fmt.Errorf("%w: %s", ErrDuplicateField, name)
	}
	d.fields[name] = value
	return nil
}

// splitField splits "name: value" and lower-cases the name, as HTTP and
// robots.txt field names are case-insensitive.
func splitField(line []byte) (name, value string, ok bool) {
	i := bytes.IndexByte(line, ':')
	if i <= 0 {
		return "", "", false
	}
	n := bytes.TrimSpace(line[:i])
	for _, c := range n {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return "", "", false
		}
	}
	return string(bytes.ToLower(n)), string(bytes.TrimSpace(line[i+1:])), len(n) > 0
}

// finish turns the assembled fields into an event.
func (d *DatReader) finish() (webevents.Event, error) {
	d.pending = false
	if d.records++; d.records > d.lim.MaxRecords {
		d.err = fmt.Errorf("%w: more than %d", ErrTooManyRecords, d.lim.MaxRecords)
		return webevents.Event{}, d.err
	}
	if d.bad != nil {
		return webevents.Event{}, &RecordError{Line: d.start, Err: d.bad}
	}
	e, err := eventFromFields(d.fields, d.now())
	if err != nil {
		return webevents.Event{}, &RecordError{Line: d.start, Err: err}
	}
	return e, nil
}

func eventFromFields(f map[string]string, now time.Time) (webevents.Event, error) {
	var e webevents.Event
	for _, name := range [...]string{"url", "size", "lmd", "lpd", "cid", "stat"} {
		if _, ok := f[name]; !ok {
			return e, fmt.Errorf("%w: %s", ErrMissingField, name)
		}
	}
	var err error
	e.URL, e.CID, e.Digest, e.ETag, e.Fingerprint = f["url"], f["cid"], f["digest"], f["etag"], f["fp"]
	if e.Size, err = parseNum("size", f["size"]); err != nil {
		return e, err
	}
	if e.LMD, err = parseNum("lmd", f["lmd"]); err != nil {
		return e, err
	}
	if e.LPD, err = parseNum("lpd", f["lpd"]); err != nil {
		return e, err
	}
	if v, ok := f["ttl"]; ok {
		if e.TTL, err = parseNum("ttl", v); err != nil {
			return e, err
		}
	}
	if e.Stat, err = webevents.ParseStat(f["stat"]); err != nil {
		return e, err
	}
	if err := e.Validate(); err != nil {
		return e, err
	}
	if err := e.CheckDates(now); err != nil {
		return e, err
	}
	return e, nil
}

// parseNum accepts plain decimal digits only: no sign, no spaces inside,
// at most 18 digits so the value fits an int64.
func parseNum(field, s string) (int64, error) {
	if len(s) == 0 || len(s) > 18 {
		return 0, fmt.Errorf("%w: %s %.20q", ErrBadNumber, field, s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%w: %s %.20q", ErrBadNumber, field, s)
		}
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %.20q", ErrBadNumber, field, s)
	}
	return v, nil
}

// DatWriter encodes records into a day file.
type DatWriter struct {
	w   *bufio.Writer
	buf []byte
	n   int64
}

// NewDatWriter returns an encoder writing to w. Call Flush at the end.
func NewDatWriter(w io.Writer) *DatWriter { return &DatWriter{w: bufio.NewWriterSize(w, 64<<10)} }

// Write encodes one record. The event must be valid (webevents.Event.Validate).
func (w *DatWriter) Write(e *webevents.Event) error {
	if err := e.Validate(); err != nil {
		return err
	}
	w.buf = webevents.AppendRecord(w.buf[:0], e)
	n, err := w.w.Write(w.buf)
	w.n += int64(n)
	return err
}

// Written returns the bytes written so far.
func (w *DatWriter) Written() int64 { return w.n }

// Flush writes buffered data to the underlying writer.
func (w *DatWriter) Flush() error { return w.w.Flush() }

// IsRecordError reports whether err is a skipped bad record (decoding may
// continue) rather than a fatal error.
func IsRecordError(err error) bool {
	var re *RecordError
	return errors.As(err, &re)
}
