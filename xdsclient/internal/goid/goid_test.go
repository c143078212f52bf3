package goid

import (
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Get agrees with the runtime's own stack header, stays the same on one
// goroutine and differs between two.
func TestGet(t *testing.T) {
	var buf [64]byte
	header := string(buf[:runtime.Stack(buf[:], false)])
	want, err := strconv.ParseInt(strings.Fields(header)[1], 10, 64)
	if err != nil {
		t.Fatalf("stack header %q: %v", header, err)
	}
	if got := Get(); got != want {
		t.Errorf("Get() = %d, want %d (stack header %q)", got, want, header)
	}
	if a, b := Get(), Get(); a != b {
		t.Errorf("Get() on one goroutine: %d then %d", a, b)
	}
	other := make(chan int64)
	go func() { other <- Get() }()
	if id := <-other; id == want || id <= 0 {
		t.Errorf("Get() on another goroutine = %d, this one's is %d", id, want)
	}
}
