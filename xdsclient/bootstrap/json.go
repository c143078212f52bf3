package bootstrap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/xdslens/xdslens/internal/truncate"
)

// fieldError is a bootstrap error tied to one place in the JSON document.
// Its text is "<path>: <message>", for example
// `xds_servers[1].server_uri: empty`.
type fieldError struct {
	path string
	msg  string
}

func (e *fieldError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

// errAt returns the error at path; its message is cut at maxCause bytes,
// and the strings of the bootstrap that it quotes must be quoted with
// quote, so that the path (which quotes names) and the message stay within
// maxMessage.
func errAt(path, format string, args ...any) error {
	return &fieldError{path: path, msg: truncate.String(fmt.Sprintf(format, args...), maxCause)}
}

// joinKey returns the path of the object member key under path.
func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// joinIndex returns the path of the array element i under path.
func joinIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

// joinEntry returns the path of the map entry name under path, as in
// authorities["a"].
func joinEntry(path, name string) string {
	return path + "[" + quote(name) + "]"
}

// kind is the JSON type of a value, read from its first byte.
type kind int

const (
	kindInvalid kind = iota
	kindNull
	kindObject
	kindArray
	kindString
	kindBool
	kindNumber
)

func kindOf(raw json.RawMessage) kind {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 {
		return kindInvalid
	}
	switch raw[0] {
	case 'n':
		return kindNull
	case '{':
		return kindObject
	case '[':
		return kindArray
	case '"':
		return kindString
	case 't', 'f':
		return kindBool
	default:
		return kindNumber
	}
}

// The bounds of the errors of this package, those of the messages the
// client gives watchers about what a server sent: a string of the
// bootstrap quoted in an error is cut at maxQuoted bytes, the message of a
// field at maxCause, a whole error at maxMessage; each cut is marked
// "...[N more bytes]". A bootstrap is read from the environment by every
// channel of the default pool, so an error of it may become the status
// message of every RPC.
const (
	maxQuoted  = 1 << 10
	maxCause   = 8 << 10
	maxMessage = 16 << 10
)

// quote returns s, a string of the bootstrap, quoted in Go syntax for an
// error message, cut at maxQuoted bytes.
func quote(s string) string { return strconv.Quote(truncate.String(s, maxQuoted)) }

// quoteList quotes each of ss, as quote does, in brackets, the whole cut
// at maxCause bytes.
func quoteList(ss []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range ss {
		if i > 0 {
			b.WriteByte(' ')
		}
		if b.Len() > maxCause {
			fmt.Fprintf(&b, "...[%d more]", len(ss)-i)
			break
		}
		b.WriteString(quote(s))
	}
	b.WriteByte(']')
	return b.String()
}

// boundedError is an error of this package as its callers see it: its
// text cut at maxMessage bytes. It wraps the error it cuts.
type boundedError struct{ err error }

func (e boundedError) Error() string { return truncate.String(e.err.Error(), maxMessage) }
func (e boundedError) Unwrap() error { return e.err }

// bounded returns err as a boundedError; nil for nil.
func bounded(err error) error {
	if err == nil {
		return nil
	}
	return boundedError{err}
}

// maxShown is how many bytes of a bad value an error message shows.
const maxShown = 64

// show renders a JSON value compactly for an error message, shortened when
// long.
func show(raw json.RawMessage) string {
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		buf.Reset()
		buf.Write(bytes.TrimSpace(raw))
	}
	s := buf.String()
	if len(s) > maxShown {
		s = s[:maxShown] + "..."
	}
	return s
}

// wrongType is the error for a value of the wrong JSON type.
func wrongType(path, want string, raw json.RawMessage) error {
	return errAt(path, "want %s, got %s", want, show(raw))
}

// object is a decoded JSON object together with its path in the document.
type object struct {
	path   string
	fields map[string]json.RawMessage
}

// asObject decodes raw as a JSON object found at path.
func asObject(path string, raw json.RawMessage) (object, error) {
	if kindOf(raw) != kindObject {
		return object{}, wrongType(path, "a JSON object", raw)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return object{}, errAt(path, "%v", err)
	}
	return object{path: path, fields: fields}, nil
}

// asArray decodes raw as a JSON array found at path.
func asArray(path string, raw json.RawMessage) ([]json.RawMessage, error) {
	if kindOf(raw) != kindArray {
		return nil, wrongType(path, "a JSON array", raw)
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, errAt(path, "%v", err)
	}
	return elems, nil
}

// asString decodes raw as a JSON string found at path.
func asString(path string, raw json.RawMessage) (string, error) {
	if kindOf(raw) != kindString {
		return "", wrongType(path, "a string", raw)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", errAt(path, "%v", err)
	}
	return s, nil
}

// at returns the path of member key.
func (o object) at(key string) string { return joinKey(o.path, key) }

// get returns the raw value of member key. A member whose value is null
// counts as absent.
func (o object) get(key string) (json.RawMessage, bool) {
	raw, ok := o.fields[key]
	if !ok || kindOf(raw) == kindNull {
		return nil, false
	}
	return raw, true
}

// str returns member key as a string; "" when absent.
func (o object) str(key string) (string, bool, error) {
	raw, ok := o.get(key)
	if !ok {
		return "", false, nil
	}
	s, err := asString(o.at(key), raw)
	return s, err == nil, err
}

// obj returns member key as an object.
func (o object) obj(key string) (object, bool, error) {
	raw, ok := o.get(key)
	if !ok {
		return object{}, false, nil
	}
	sub, err := asObject(o.at(key), raw)
	return sub, err == nil, err
}

// arr returns member key as an array.
func (o object) arr(key string) ([]json.RawMessage, bool, error) {
	raw, ok := o.get(key)
	if !ok {
		return nil, false, nil
	}
	elems, err := asArray(o.at(key), raw)
	return elems, err == nil, err
}

// syntaxError turns a JSON decoding error of data into one that gives the
// line and column (both starting at 1) of the offending byte.
func syntaxError(data []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	off := int(se.Offset) - 1 // Offset counts the bytes read, including the bad one.
	if off < 0 {
		off = 0
	}
	if off > len(data) {
		off = len(data)
	}
	line := 1 + bytes.Count(data[:off], []byte{'\n'})
	col := off - bytes.LastIndexByte(data[:off], '\n')
	return fmt.Errorf("invalid JSON at line %d, column %d: %w", line, col, err)
}

// canonicalJSON returns raw with insignificant whitespace removed and object
// keys sorted, so that equal JSON values give equal bytes. An absent or null
// value gives "{}", the same as an empty object.
func canonicalJSON(raw json.RawMessage) string {
	if k := kindOf(raw); k == kindInvalid || k == kindNull {
		return "{}"
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return string(bytes.TrimSpace(raw))
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(bytes.TrimSpace(raw))
	}
	return string(out)
}
