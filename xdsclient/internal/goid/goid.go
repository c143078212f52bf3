// Package goid reads the ID of the calling goroutine, which the client
// and the dependency manager (xdsconfig) use only to recognise a call
// made from inside one of their own callbacks (a Close or a cancel from a
// watcher, a Pool observer that calls the Pool, a Manager.Stop from its
// Watcher), where waiting for that callback would wait for ever.
//
// It is read only when the one who runs callbacks says, by its own state,
// that a callback runs at that moment (a lane's current callback or hook,
// the Pool's observer call, the Manager's Watcher call): then a call from
// that callback and a call from another goroutine meet the same state,
// and the callbacks get no value they could hand back to tell them apart,
// so the goroutine's identity is what does. A cancel, a Close or a Pool's
// Get that meets no running callback reads no ID.
package goid

import (
	"bytes"
	"runtime"
	"strconv"
)

// Get returns the ID of the calling goroutine, read from its stack header
// ("goroutine 18 [running]:"), or -1 if the header cannot be read.
func Get() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		b = b[:i]
	}
	id, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return -1
	}
	return id
}
