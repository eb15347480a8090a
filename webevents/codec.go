package webevents

import (
	"encoding/binary"
	"errors"
)

// The on-disk value of an event: a version byte, the stat, then varints and
// length-prefixed strings. It is private to the store, compact, and about
// ten times faster than encoding/json; the version byte lets it change.
const codecV1 = 1

// codecV3 is codecV1 with the fingerprint after the etag, and the
// attribution always length-prefixed. Records without a fingerprint are
// still written as codecV1, so stores stay readable by older builds.
const codecV3 = 3

var errCorrupt = errors.New("webevents: corrupt stored event")

func appendBinary(dst []byte, e *Event) []byte {
	v := byte(codecV1)
	if e.Fingerprint != "" {
		v = codecV3
	}
	dst = append(dst, v, byte(e.Stat))
	dst = binary.AppendVarint(dst, e.Size)
	dst = binary.AppendVarint(dst, e.LMD)
	dst = binary.AppendVarint(dst, e.LPD)
	dst = binary.AppendVarint(dst, e.TTL)
	for _, s := range [...]string{e.URL, e.CID, e.Digest, e.ETag} {
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	if v == codecV3 {
		dst = binary.AppendUvarint(dst, uint64(len(e.Fingerprint)))
		dst = append(dst, e.Fingerprint...)
	}
	if e.From != "" {
		// Attribution came after the first stores were written: a value
		// without it is a record of the peer's own polls.
		dst = binary.AppendUvarint(dst, uint64(len(e.From)))
		dst = append(dst, e.From...)
	}
	return dst
}

// A day-log value is either one event (codecV1, all that stores wrote
// before blocks) or a block of consecutive events (codecBlock): a version
// byte, then each event as a uvarint length and its codecV1 bytes. A
// commit writes each day's new records as blocks, so a merge costs one key
// per event (its current state) and one per block, not two per event.
const codecBlock = 2

// appendToBlock adds one event's codecV1 bytes to a block, starting the
// block if dst is empty.
func appendToBlock(dst, rec []byte) []byte {
	if len(dst) == 0 {
		dst = append(dst, codecBlock)
	}
	dst = binary.AppendUvarint(dst, uint64(len(rec)))
	return append(dst, rec...)
}

// decodeLog calls fn with each event of a day-log value, in order.
func decodeLog(b []byte, fn func(Event) error) error {
	return decodeLogRecords(b, func(_ []byte, e Event) error { return fn(e) })
}

// decodeLogRecords is decodeLog that also gives each event's encoded
// bytes (valid during the call), for the origin index to copy as they are.
func decodeLogRecords(b []byte, fn func(rec []byte, e Event) error) error {
	if len(b) > 0 && (b[0] == codecV1 || b[0] == codecV3) {
		e, err := decodeBinary(b)
		if err != nil {
			return err
		}
		return fn(b, e)
	}
	if len(b) < 2 || b[0] != codecBlock {
		return errCorrupt
	}
	for b = b[1:]; len(b) > 0; {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return errCorrupt
		}
		rec := b[n : n+int(l)]
		e, err := decodeBinary(rec)
		if err != nil {
			return err
		}
		if err := fn(rec, e); err != nil {
			return err
		}
		b = b[n+int(l):]
	}
	return nil
}

func decodeBinary(b []byte) (Event, error) {
	var e Event
	if len(b) < 2 || b[0] != codecV1 && b[0] != codecV3 {
		return e, errCorrupt
	}
	v := b[0]
	e.Stat = Stat(b[1])
	b = b[2:]
	for _, p := range [...]*int64{&e.Size, &e.LMD, &e.LPD, &e.TTL} {
		v, n := binary.Varint(b)
		if n <= 0 {
			return e, errCorrupt
		}
		*p, b = v, b[n:]
	}
	for _, p := range [...]*string{&e.URL, &e.CID, &e.Digest, &e.ETag} {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return e, errCorrupt
		}
		*p, b = string(b[n:n+int(l)]), b[n+int(l):]
	}
	if v == codecV3 {
		l, n := binary.Uvarint(b)
		if n <= 0 || l > uint64(len(b)-n) {
			return e, errCorrupt
		}
		e.Fingerprint, b = string(b[n:n+int(l)]), b[n+int(l):]
	}
	if len(b) > 0 {
		l, n := binary.Uvarint(b)
		if n <= 0 || l != uint64(len(b)-n) {
			return e, errCorrupt
		}
		e.From = string(b[n:])
	}
	return e, nil
}
