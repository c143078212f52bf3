package xdswatch

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"google.golang.org/grpc/status"

	"github.com/xdslens/xdslens/xdsclient"
)

// printWatcher is an xdsclient.Watcher that prints every callback for one
// watch. In text output, an error that says what the last line of the
// watch said is not printed again: while a server stays unreachable, each
// failed reconnect reports it to every watcher again, and a person wants
// one line per change. JSON output, for programs, has every callback.
type printWatcher struct {
	out  *output
	spec spec

	mu sync.Mutex // guards last
	// last is the error the last text line of this watch printed ("" when
	// it printed a resource or a cleared error).
	last string
}

// ResourceChanged prints a resource event, or a resource_error event when
// err is set.
func (w *printWatcher) ResourceChanged(r *xdsclient.Resource, err error) {
	if err != nil {
		if !w.repeated(eventResourceError, err) {
			w.out.watchError(eventResourceError, w.spec.typ, w.spec.name, err)
		}
		return
	}
	w.repeated(eventResource, nil)
	w.out.resource(w.spec.typ, w.spec.name, r)
}

// AmbientError prints an ambient_error event.
func (w *printWatcher) AmbientError(err error) {
	if !w.repeated(eventAmbientError, err) {
		w.out.watchError(eventAmbientError, w.spec.typ, w.spec.name, err)
	}
}

// repeated records that the watch is told event with err, and reports
// whether, in text output, the last line of this watch said the same.
func (w *printWatcher) repeated(event string, err error) bool {
	if w.out.json {
		return false
	}
	key := ""
	if err != nil {
		st := status.Convert(err)
		key = event + " " + st.Code().String() + " " + sameState(st.Message())
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	repeat := key != "" && key == w.last
	w.last = key
	return repeat
}

// unreachableCause starts the cause of the error that xdsclient gives
// watchers when their server cannot be reached. The servers tried follow
// it, then the transport's reason for the last attempt.
const unreachableCause = "xDS server unreachable (servers tried: "

// sameState returns msg without what may differ between two errors that
// mean the same state: the transport's reason of an unreachable server
// (EOF as the server stops, then connection refused) is dropped, the
// servers tried are kept.
func sameState(msg string) string {
	i := strings.Index(msg, unreachableCause)
	if i < 0 {
		return msg
	}
	j := strings.Index(msg[i+len(unreachableCause):], "): ")
	if j < 0 {
		return msg
	}
	return msg[:i+len(unreachableCause)+j+1]
}

// watchSet holds the running watches, oldest first for each resource. It
// is used by one goroutine only.
type watchSet struct {
	client *xdsclient.Client
	out    *output
	// channels are the xds:/// channels that commands start and close.
	channels *channelSet
	byKey    map[resourceKey][]func()
	// order lists every key that has had a watch, in first-watch order,
	// so that cancelAll is deterministic.
	order []resourceKey
}

// newWatchSet returns an empty set of watches on client printing to out,
// whose commands start and close the channels of channels too.
func newWatchSet(client *xdsclient.Client, out *output, channels *channelSet) *watchSet {
	return &watchSet{client: client, out: out, channels: channels, byKey: map[resourceKey][]func(){}}
}

// add starts one more watcher of s.
func (ws *watchSet) add(s spec) {
	k := s.key()
	if _, seen := ws.byKey[k]; !seen {
		ws.order = append(ws.order, k)
	}
	cancel := ws.client.Watch(s.typ, s.name, &printWatcher{out: ws.out, spec: s})
	ws.byKey[k] = append(ws.byKey[k], cancel)
}

// cancelOldest cancels the oldest watcher of s, reporting false when s has
// none.
func (ws *watchSet) cancelOldest(s spec) bool {
	k := s.key()
	cancels := ws.byKey[k]
	if len(cancels) == 0 {
		return false
	}
	cancels[0]()
	ws.byKey[k] = cancels[1:]
	return true
}

// cancelAll cancels every watcher.
func (ws *watchSet) cancelAll() {
	for _, k := range ws.order {
		for _, cancel := range ws.byKey[k] {
			cancel()
		}
		ws.byKey[k] = nil
	}
}

// errUnknownCommand is returned by command for a line that is neither
// +TYPE:NAME, -TYPE:NAME, +xds:///LISTENER nor -xds:///LISTENER.
var errUnknownCommand = errors.New("want +TYPE:NAME, -TYPE:NAME, +xds:///LISTENER or -xds:///LISTENER")

// command runs one line read from standard input: "+TYPE:NAME" starts one
// more watcher, "-TYPE:NAME" cancels the oldest watcher of that resource;
// "+xds:///LISTENER" starts one more channel, "-xds:///LISTENER" closes
// the oldest channel of that target. Surrounding white space is ignored;
// line must not be blank.
func (ws *watchSet) command(line string) error {
	line = strings.TrimSpace(line)
	var op byte
	if line != "" {
		op = line[0]
	}
	if op != '+' && op != '-' {
		return fmt.Errorf("%q: %w", line, errUnknownCommand)
	}
	arg := strings.TrimSpace(line[1:])
	if isTarget(arg) {
		return ws.channelCommand(op, arg, line)
	}
	s, err := parseSpec(arg)
	if err != nil {
		return fmt.Errorf("%q: %w", line, err)
	}
	if op == '+' {
		ws.add(s)
		return nil
	}
	if !ws.cancelOldest(s) {
		return fmt.Errorf("%q: no watcher of %s to cancel", line, s)
	}
	return nil
}

// channelCommand runs the command line op arg: '+' starts one more
// channel to the target arg, '-' closes its oldest one.
func (ws *watchSet) channelCommand(op byte, arg, line string) error {
	t, err := parseTarget(arg)
	if err != nil {
		return fmt.Errorf("%q: %w", line, err)
	}
	if op == '+' {
		if err := ws.channels.add(t); err != nil {
			return fmt.Errorf("%q: %w", line, err)
		}
		return nil
	}
	if !ws.channels.cancelOldest(t) {
		return fmt.Errorf("%q: no channel to %s to close", line, arg)
	}
	return nil
}

// maxCommandLine bounds one line of standard input; a longer line is
// reported and skipped, and reading goes on.
const maxCommandLine = 64 << 10

// readCommands reads r line by line on a new goroutine and sends each line
// that is not blank to the returned channel, which is closed at the end of
// r. A line longer than maxCommandLine is reported on errw and skipped; a
// read error is reported and ends the reading. Once done is closed, the
// goroutine sends nothing more and ends after its current read.
func readCommands(r io.Reader, done <-chan struct{}, errw io.Writer) <-chan string {
	lines := make(chan string)
	go func() {
		defer close(lines)
		br := bufio.NewReaderSize(r, 4096)
		for n := 1; ; n++ {
			line, tooLong, err := readLine(br, maxCommandLine)
			if tooLong {
				fmt.Fprintf(errw, "xdswatch: stdin: line %d is longer than %d KiB; skipped\n", n, maxCommandLine>>10)
			} else if line = strings.TrimSpace(line); line != "" {
				select {
				case lines <- line:
				case <-done:
					return
				}
			}
			if err != nil {
				if err != io.EOF {
					select {
					case <-done:
					default:
						fmt.Fprintf(errw, "xdswatch: stdin: %v; no more commands are read\n", err)
					}
				}
				return
			}
		}
	}()
	return lines
}

// readLine reads one line without its end. A line longer than max bytes is
// read to its end and dropped, with tooLong set. err is set at the end of
// input (io.EOF) or on a read error, after the last line.
func readLine(br *bufio.Reader, max int) (line string, tooLong bool, err error) {
	var b []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if !tooLong {
			if len(b)+len(chunk) > max+1 {
				tooLong, b = true, nil
			} else {
				b = append(b, chunk...)
			}
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if tooLong {
			return "", true, err
		}
		return strings.TrimRight(string(b), "\r\n"), false, err
	}
}
