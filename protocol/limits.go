package protocol

import "errors"

// Limits bound what a decoder accepts from one file. The zero value of a
// field means its default.
type Limits struct {
	MaxLineBytes   int   // longest line, terminator included; default 16 KiB
	MaxFields      int   // fields in one record; default 32
	MaxRecords     int64 // records in one file; default 10,000,000
	MaxBytes       int64 // bytes in one file (after decompression); default 1 GiB
	MaxShareFields int   // lines in a robots.shr; default 1,000
}

// DefaultLimits are generous for honest peers and bounded for hostile ones.
var DefaultLimits = Limits{
	MaxLineBytes:   16 << 10,
	MaxFields:      32,
	MaxRecords:     10_000_000,
	MaxBytes:       1 << 30,
	MaxShareFields: 1000,
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits
	if l.MaxLineBytes > 0 {
		d.MaxLineBytes = l.MaxLineBytes
	}
	if l.MaxFields > 0 {
		d.MaxFields = l.MaxFields
	}
	if l.MaxRecords > 0 {
		d.MaxRecords = l.MaxRecords
	}
	if l.MaxBytes > 0 {
		d.MaxBytes = l.MaxBytes
	}
	if l.MaxShareFields > 0 {
		d.MaxShareFields = l.MaxShareFields
	}
	return d
}

// Errors of the protocol package. Decoding errors wrap one of them; match
// with errors.Is.
var (
	ErrLineTooLong        = errors.New("protocol: line too long")
	ErrTooManyFields      = errors.New("protocol: too many fields in record")
	ErrTooManyRecords     = errors.New("protocol: too many records")
	ErrTooLarge           = errors.New("protocol: file exceeds byte limit")
	ErrSyntax             = errors.New("protocol: line is not field: value")
	ErrMissingField       = errors.New("protocol: required field missing")
	ErrDuplicateField     = errors.New("protocol: field repeated")
	ErrBadNumber          = errors.New("protocol: not a decimal number")
	ErrUnsupportedVersion = errors.New("protocol: unsupported protocol version")
	ErrBinary             = errors.New("protocol: NUL byte in text")
	ErrTooSlow            = errors.New("protocol: day file below the minimum speed")
	ErrMergeTooLong       = errors.New("protocol: merge took longer than its limit")
)
