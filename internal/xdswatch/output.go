package xdswatch

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/xdslens/xdslens/telemetry/dataplane"
	"github.com/xdslens/xdslens/xdsclient"
	"github.com/xdslens/xdslens/xdsclient/xdsresource"

	"github.com/xdslens/xdslens/internal/redact"
)

// Values of the "event" key of the JSON output.
const (
	// eventListening is the first line: the CSDS and metrics addresses.
	eventListening = "listening"
	// eventResource is a new valid resource (ResourceChanged without an
	// error).
	eventResource = "resource"
	// eventResourceError is an error that makes the resource unusable
	// (ResourceChanged with an error).
	eventResourceError = "resource_error"
	// eventAmbientError is an error that leaves the resource in use
	// (AmbientError).
	eventAmbientError = "ambient_error"
)

// textTime is the layout of the timestamp that starts each text line.
const textTime = "15:04:05.000"

// output writes events to standard output, one whole line per Write, under
// a mutex, so lines from different goroutines never interleave and each
// reaches the writer as soon as it is complete.
type output struct {
	mu   sync.Mutex
	w    io.Writer
	json bool
	now  func() time.Time
}

// newOutput returns an output writing format (outputText or outputJSON) to
// w.
func newOutput(w io.Writer, format string) *output {
	return &output{w: w, json: format == outputJSON, now: time.Now}
}

// writeLine writes line, which ends in a newline, as one Write.
func (o *output) writeLine(line []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	// A failed write to standard output has nowhere better to be reported.
	_, _ = o.w.Write(line)
}

// listeningEvent is the first JSON line.
type listeningEvent struct {
	Event   string `json:"event"`
	CSDS    string `json:"csds"`
	Metrics string `json:"metrics"`
}

// resourceEvent is the JSON line of a new resource.
type resourceEvent struct {
	TS       string          `json:"ts"`
	Event    string          `json:"event"`
	Type     string          `json:"type"`
	Name     string          `json:"name"`
	Version  string          `json:"version"`
	Resource json.RawMessage `json:"resource"`
}

// errorEvent is the JSON line of a resource error or an ambient error.
type errorEvent struct {
	TS      string `json:"ts"`
	Event   string `json:"event"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// listening reports the addresses that CSDS and metrics are served on ("" for
// none). Only JSON output prints it.
func (o *output) listening(csds, metrics string) {
	if o.json {
		o.writeJSON(listeningEvent{Event: eventListening, CSDS: csds, Metrics: metrics})
	}
}

// resource reports a new valid resource r for the watch of typ and name.
func (o *output) resource(typ xdsresource.Type, name string, r *xdsclient.Resource) {
	ts := o.now()
	if o.json {
		o.writeJSON(resourceEvent{
			TS: ts.UTC().Format(time.RFC3339Nano), Event: eventResource,
			Type: typeLabel(typ), Name: name, Version: r.Version, Resource: resourceJSON(r),
		})
		return
	}
	version := "v" + r.Version
	if r.Version == "" {
		version = "(no version)"
	}
	o.writeText(fmt.Sprintf("%s %s %s %s: %s", ts.Format(textTime), typeLabel(typ), name, version, summary(r)))
}

// watchError reports err to the watch of typ and name: event is
// eventResourceError (ResourceChanged with an error) or eventAmbientError.
func (o *output) watchError(event string, typ xdsresource.Type, name string, err error) {
	ts := o.now()
	st := status.Convert(err)
	if o.json {
		o.writeJSON(errorEvent{
			TS: ts.UTC().Format(time.RFC3339Nano), Event: event,
			Type: typeLabel(typ), Name: name, Code: codeName(st.Code()), Message: st.Message(),
		})
		return
	}
	if err == nil {
		// AmbientError(nil): the error reported before is over.
		o.writeText(fmt.Sprintf("%s %s %s ambient error cleared", ts.Format(textTime), typeLabel(typ), name))
		return
	}
	word := "ERROR"
	if event == eventAmbientError {
		word = "AMBIENT"
	}
	o.writeText(fmt.Sprintf("%s %s %s %s %s: %s", ts.Format(textTime), typeLabel(typ), name, word, codeName(st.Code()), st.Message()))
}

// writeJSON writes v as one JSON line, without HTML escaping.
func (o *output) writeJSON(v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// The event types hold only strings and valid JSON, so this
		// cannot happen; say so rather than print nothing.
		fmt.Fprintf(&b, `{"event":"internal_error","message":%q}`+"\n", err.Error())
	}
	o.writeLine(b.Bytes())
}

// writeText writes s as one text line.
func (o *output) writeText(s string) {
	o.writeLine([]byte(oneLine(s) + "\n"))
}

// summarizer is implemented by the decoded values of the built-in types.
type summarizer interface{ Summary() string }

// summary describes r in one line: the value's Summary when it has one.
func summary(r *xdsclient.Resource) string {
	if s, ok := r.Value.(summarizer); ok {
		return s.Summary()
	}
	return fmt.Sprintf("%s, %d bytes", r.Raw.GetTypeUrl(), len(r.Raw.GetValue()))
}

// resourceJSON is r's message as protojson, with secrets redacted (see
// package redact). When the message or a message nested in it cannot be
// resolved, it falls back to the Any's type URL and base64 bytes, so a line
// is always printed.
func resourceJSON(r *xdsclient.Resource) json.RawMessage {
	raw := redact.Any(r.Raw)
	if m, err := raw.UnmarshalNew(); err == nil {
		if b, err := protojson.Marshal(m); err == nil {
			return b
		}
	}
	b, _ := json.Marshal(struct {
		Type  string `json:"@type"`
		Value []byte `json:"value"`
	}{raw.GetTypeUrl(), raw.GetValue()})
	return b
}

// codeName returns c's name in upper snake case, such as NOT_FOUND, as
// the gRPC spec and the data-plane metrics spell it; a code outside
// gRPC's set is printed as codes.Code prints it ("Code(42)").
func codeName(c codes.Code) string { return dataplane.StatusName(c) }

// lockedWriter serializes writes to w, so that lines written to standard
// error by different goroutines never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write writes p to the underlying writer under the lock.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
